"""One JSON API call over the daemon's Unix socket (tests of the JSON face)."""
import http.client
import json
import socket


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("torchd")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def call(sh, method, path, body=None, headers=None):
    """(status, reply text) of one request; body: a JSON-able value or None."""
    conn = UnixHTTPConnection(sh.socket)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


def post(sh, op, body, replies=None):
    """(status, parsed JSON reply) of POST /v1/ops/OP; replies: what the caller lists in Torchsh-Replies."""
    status, text = call(sh, "POST", "/v1/ops/" + op, body, {"Torchsh-Replies": " ".join(replies)} if replies else None)
    return status, json.loads(text)
