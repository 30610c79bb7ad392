"""Pure HTTP/1.1 framing: bytes in, Request out; Response in, bytes out. No sockets, no globals.

Enough of RFC 9112 for a private socket: Content-Length bodies (no chunked requests), keep-alive
by default, `Connection: close` honoured. Shaped after h11: the server owns the I/O.
"""
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

MAX_HEAD = 64 * 1024
REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
           413: "Content Too Large", 422: "Unprocessable Content", 500: "Internal Server Error",
           503: "Service Unavailable", 507: "Insufficient Storage"}


class HTTPError(Exception):
    """The bytes are not an HTTP request we can serve; the connection must close."""


@dataclass
class Request:
    method: str
    target: str
    headers: dict
    body: bytes = b""

    @property
    def path(self):
        return urlsplit(self.target).path

    @property
    def query(self):
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.target).query).items()}

    @property
    def keep_alive(self):
        return self.headers.get("connection", "").lower() != "close"


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict = field(default_factory=dict)

    def to_bytes(self, keep_alive=True):
        lines = ["HTTP/1.1 %d %s" % (self.status, REASONS.get(self.status, "Status")),
                 "Content-Type: " + self.content_type,
                 "Content-Length: %d" % len(self.body)]
        lines += ["%s: %s" % kv for kv in self.headers.items()]
        if not keep_alive:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + self.body


def parse_request(buf, max_body):
    """Return (Request, bytes consumed) if buf holds a whole request, else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > MAX_HEAD:
            raise HTTPError("request head too large")
        return None
    head = buf[:end].decode("latin-1").split("\r\n")
    try:
        method, target, version = head[0].split(" ")
    except ValueError:
        raise HTTPError("malformed request line %r" % head[0][:80]) from None
    if not version.startswith("HTTP/1."):
        raise HTTPError("unsupported protocol %r" % version)
    headers = {}
    for line in head[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise HTTPError("malformed header line")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise HTTPError("chunked request bodies are not supported; send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise HTTPError("bad Content-Length") from None
    if length < 0 or length > max_body:
        raise HTTPError("body of %d bytes is over the %d-byte limit" % (length, max_body))
    start = end + 4
    if len(buf) - start < length:
        return None
    if version == "HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive":
        headers["connection"] = "close"
    return Request(method, target, headers, bytes(buf[start:start + length])), start + length
