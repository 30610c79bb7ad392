"""Calls and checks the structured-error tests share (tests/e2e/test_structured_errors*.py): a request
straight over the daemon's socket (`post_raw`; `api`, a JSON API call; `cli`, POST /v1/cli with words the
kernel's argv limit would stop), a script's one stderr line (`one_line`) and the code it ends with (`code_of`).
Use: `from support.structured import api, cli, code_of as _code, one_line as _line`."""
import http.client
import json
import socket

from torchsh import protocol


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("torchd", timeout=60)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.unix_path)


def post_raw(sh, path, body):
    conn = UnixHTTPConnection(sh.socket)
    try:
        conn.request("POST", path, body=body)
        r = conn.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        conn.close()


def api(sh, path, body):
    status, _, payload = post_raw(sh, path, body if isinstance(body, bytes) else json.dumps(body).encode())
    return status, json.loads(payload)


def cli(sh, *argv):
    """POST /v1/cli straight over the socket (words the kernel's 128 KiB argv limit would stop). (exit, stderr)"""
    body = protocol.encode_cli_request([a.encode() for a in argv], sh.folder.encode(), True, [])
    status, headers, payload = post_raw(sh, protocol.CLI_PATH, body)
    out_len = int(headers[protocol.H_STDOUT])
    return int(headers[protocol.H_EXIT]), payload[out_len:].decode()


def one_line(sh, script):
    r = sh.run(script)
    lines = r.err.strip().split("\n")
    assert len(lines) == 1, r.err
    return r.code, lines[0]


def code_of(line):
    return line.rsplit("[", 1)[1].rstrip("]")
