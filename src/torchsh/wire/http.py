"""Pure HTTP/1.1 framing: bytes in, Request out; Response in, bytes out. No sockets, no globals.

Enough of RFC 9112 for a private socket: Content-Length bodies (no chunked requests), keep-alive
by default, `Connection: close` honoured. Shaped after h11: the server owns the I/O.
Strict where leniency lets two parsers disagree on where a request ends (request smuggling):
Content-Length is plain digits and said once; the head (request line, headers and the blank line
that ends them) is at most MAX_HEAD bytes, exactly.
"""
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

MAX_HEAD = 64 * 1024
BIG_BODY = 1 << 20
REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
           413: "Content Too Large", 422: "Unprocessable Content", 429: "Too Many Requests", 500: "Internal Server Error",
           503: "Service Unavailable", 507: "Insufficient Storage"}


class HTTPError(Exception):
    """The bytes are not an HTTP request we can serve; the connection must close.
    code: a protocol.ERRORS code (bad_request, or too_large for a head or body over its limit)."""

    def __init__(self, message, code="bad_request"):
        super().__init__(message)
        self.code = code


@dataclass
class Request:
    method: str
    target: str
    headers: dict
    body: bytes = b""
    peer_pid: int = None  # SO_PEERCRED of a Unix-socket connection; None on the fast path (TCP)
    peer_uid: int = None
    hold: object = None   # hold(end): end() runs when the request's connection closes (daemon/conn.Conn.hold)
    prepared: object = None  # its body as its handler reads it, decoded off the tensor thread (Prepare)

    # Every request reads its path (routing) and query (post_op's ?nan=); the common target, a plain
    # "/v1/..." with no query, skips urlsplit and parse_qs (~4 us a request between them).
    @property
    def path(self):
        if self.target[:1] == "/" and self.target[1:2] != "/" and "?" not in self.target and "#" not in self.target:
            return self.target
        return urlsplit(self.target).path

    @property
    def query(self):
        if "?" not in self.target:
            return {}
        # `?nan=` is a nan of "" (refused), not no nan at all: the OpenAPI document's enums hold for it too
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.target).query, keep_blank_values=True).items()}

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
        return self.head(keep_alive) + self.body

    def head(self, keep_alive=True):
        extra = "".join(["%s: %s\r\n" % kv for kv in self.headers.items()]) if self.headers else ""
        return ("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s%s\r\n" % (
            self.status, REASONS.get(self.status, "Status"), self.content_type, len(self.body), extra,
            "" if keep_alive else "Connection: close\r\n")).encode()

    def pieces(self, keep_alive=True):
        """The reply as bytes to write: one piece when small; a big body (`torch value` of millions of
        values) after its head, not copied behind it."""
        if len(self.body) < BIG_BODY:
            return [self.to_bytes(keep_alive)]
        return [self.head(keep_alive), self.body]


@dataclass
class Later:
    """A reply made after its handler returned, on a follower thread (daemon/workers.py), not on the worker
    that ran the handler: a job the daemon follows to its end for a caller that cannot (protocol.DAEMON).
    make(client_gone) -> the Response, or None when the client left first (nothing to send)."""
    make: object


@dataclass
class Deferred:
    """A reply made later by whoever holds `deliver`, with no thread waiting for it (a served model's batch
    answers each of its requests: serve/edge.py). attach(deliver) is called once by the worker; deliver(Response)
    may be called from any thread, once; it sends the reply and hands the connection back."""
    attach: object


@dataclass
class Prepare:
    """Work a request needs before its turn on the tensor thread (decoding a big JSON body: api/bigbody.py), done
    on a quick worker (daemon/workers.py) so that the tensor thread never waits on it. run() -> None: done, the
    request then queues for the tensor thread, whose handler finds request.prepared; or the Response refusing it."""
    run: object


def parse_request(buf, max_body):
    """Return (Request, bytes consumed) if buf holds a whole request, else None."""
    head = parse_head(buf, max_body)
    if head is None:
        return None
    start, length = head[4], head[5]
    if len(buf) - start < length:
        return None
    return request_of(head, bytes(buf[start:start + length])), start + length


def request_of(head, body):
    """The Request of a parsed head and its whole body (a big body arrives in a buffer of its own:
    daemon/bodies.py)."""
    method, target, version, headers, _, _ = head
    if version == "HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive":
        headers["connection"] = "close"
    return Request(method, target, headers, body)


def parse_head(buf, max_body):
    """(method, target, version, headers, where the body starts, its length), or None for half a head."""
    end = buf.find(b"\r\n\r\n", 0, MAX_HEAD)
    if end < 0:
        if len(buf) >= MAX_HEAD:  # even one more byte could not end a head within the limit
            raise HTTPError("request head over %d bytes" % MAX_HEAD, "too_large")
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
        name = name.strip().lower()
        if name == "content-length" and name in headers:
            raise HTTPError("Content-Length given twice")
        headers[name] = value.strip(" \t")  # RFC 9110 optional whitespace: space and tab, nothing else
    if "transfer-encoding" in headers and "chunked" in headers["transfer-encoding"].lower():
        raise HTTPError("chunked request bodies are not supported; send Content-Length")
    text = headers.get("content-length", "0")
    if not (text.isdigit() and text.isascii()):  # int() would take "+5", " 5", "5_0", "٥"
        raise HTTPError("bad Content-Length %r: plain digits only" % text[:20])
    length = int(text) if len(text) <= 18 else max_body + 1  # int() refuses over 4,300 digits
    if length > max_body:
        raise HTTPError("body of %d bytes is over the %d-byte limit" % (length, max_body), "too_large")
    return method, target, version, headers, end + 4, length
