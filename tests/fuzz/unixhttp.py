"""A small client for one test daemon over its Unix socket, counting replies by error code.

http.client with an AF_UNIX connection: no `torch` process per request, so thousands of fuzzed
requests cost seconds. Every reply is classified (ok, an error code, need_stdin, exec) and counted;
an internal_error or HTTP 500 is remembered with the request that caused it.
"""
import collections
import http.client
import json
import socket

from torchsh import protocol

TIMEOUT_S = 60  # one request; a fuzzed op that runs longer counts as a hang


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=TIMEOUT_S):
        super().__init__("torchd", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


class Daemon:
    def __init__(self, socket_path, cwd):
        self.socket_path = socket_path
        self.cwd = cwd
        self.conn = None
        self.counts = collections.Counter()
        self.internal = []   # (request, reply) of every internal_error / 500
        self.hangs = []      # requests that timed out

    def request(self, method, path, body=b"", headers=None):
        """(status, headers, body); reconnects once if the daemon closed a kept-alive connection."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = UnixHTTPConnection(self.socket_path)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                r = self.conn.getresponse()
                payload = r.read()
                out = r.status, {k.lower(): v for k, v in r.getheaders()}, payload
                if r.will_close:
                    self.close()
                return out
            except socket.timeout:
                self.close()
                self.hangs.append((method, path, body[:300]))
                raise
            except (ConnectionError, http.client.HTTPException):
                self.close()
                if attempt:
                    raise

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # -- the CLI face ----------------------------------------------------------------------
    def cli(self, argv, env=(), stdin=None, tty=True):
        """POST /v1/cli; returns (code, stdout, stderr) where code is "ok", an error code, "stdin" or "exec"."""
        body = protocol.encode_cli_request([w.encode(errors="surrogateescape") for w in argv], self.cwd.encode(),
                                           tty, [e.encode() for e in env],
                                           None if stdin is None else [l.encode() for l in stdin])
        status, headers, payload = self.request("POST", protocol.CLI_PATH, body)
        if protocol.H_STDIN in headers:
            code, out, err = "stdin", "", ""
        elif protocol.H_EXEC in headers:
            code, out, err = "exec", "", ""
        elif protocol.H_EXIT in headers:
            n = int(headers[protocol.H_STDOUT])
            out, err = payload[:n].decode(errors="replace"), payload[n:].decode(errors="replace")
            code = "ok" if headers[protocol.H_EXIT] == "0" else _code_of(err)
        else:
            code, out, err = _json_code(status, payload), "", payload.decode(errors="replace")
        self._count("cli", code, (argv, env, stdin), err)
        return code, out, err

    # -- the JSON face ---------------------------------------------------------------------
    def call(self, method, path, body=b"", headers=None):
        """Any request; returns (code, status, payload) with code "ok" for 2xx or the JSON error code."""
        status, _, payload = self.request(method, path, body, headers)
        code = "ok" if status < 300 else _json_code(status, payload)
        self._count("api", code, (method, path, body[:2000]), payload[:2000])
        return code, status, payload

    def _count(self, face, code, request, reply):
        self.counts["%s:%s" % (face, code)] += 1
        self.counts["requests"] += 1
        if code == "internal_error":
            self.internal.append((request, reply))

    def sweep(self, keep):
        """Free every object but `keep` (the fixtures), so results of earlier examples do not fill the
        memory budget. Housekeeping: not counted."""
        status, _, payload = self.request("GET", "/v1/tensors")
        assert status == 200, (payload, _last_traceback(payload))  # the census itself refused: say why
        doomed = [row["handle"] for row in json.loads(payload)["objects"] if row["handle"] not in keep]
        for i in range(0, len(doomed), 500):
            body = protocol.encode_cli_request([b"free"] + [h.encode() for h in doomed[i:i + 500]],
                                               self.cwd.encode(), True, [])
            self.request("POST", protocol.CLI_PATH, body)

    def status(self):
        status, _, payload = self.request("GET", "/v1/status")
        assert status == 200, payload
        return json.loads(payload)

    def summary(self):
        by_code = collections.Counter()
        for key, n in self.counts.items():
            if ":" in key:
                by_code[key.split(":", 1)[1]] += n
        return {"requests": self.counts["requests"], "by_code": dict(by_code.most_common()),
                "by_face_and_code": {k: v for k, v in sorted(self.counts.items()) if ":" in k},
                "internal_errors": len(self.internal), "hangs": len(self.hangs)}


def _code_of(stderr):
    """The [code] at the end of a CLI error line ("?" when the line has none)."""
    line = stderr.strip().rsplit("\n", 1)[-1]
    if line.endswith("]") and "[" in line:
        return line.rsplit("[", 1)[1][:-1]
    return "?"


def _json_code(status, payload):
    try:
        return json.loads(payload)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return "internal_error" if status >= 500 else "http_%d" % status


def _last_traceback(payload):
    """The daemon log's last traceback, found through an internal_error's hint (`see …/torchd.log`)."""
    try:
        log = json.loads(payload)["error"]["hint"].split("see ", 1)[1]
        with open(log, errors="replace") as f:
            return f.read().rsplit("Traceback", 1)[1][-3000:]
    except (ValueError, KeyError, IndexError, OSError):
        return None
