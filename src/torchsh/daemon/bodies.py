"""Request bodies as they arrive. The loop thread alone calls this (daemon/server.py): no lock.

A body is held whole in memory before its handler runs, so a big one (BIG_BODY and up) is taken in hand
when its head arrives, not after gigabytes were read:
  - it is admitted against the memory budget, or refused (out_of_memory);
  - it is judged by its first bytes against what its route takes (FORMATS: an .npy upload begins with the
    NPY magic), and refused at once with one error otherwise; the server then drains and closes;
  - it is read onto a buffer of its own, at most SLICE bytes per turn of the loop, so the connections
    around it are served meanwhile, and it is never copied whole: the handler gets that bytearray (an
    uploaded .npy becomes a tensor on it: fileio.npy_from_bytes).
"""
import time

from torchsh import memory, protocol
from torchsh.wire import http

BIG_BODY = 1 << 20  # smaller bodies arrive in a read or two, and the connection limit bounds them
SLICE = 1 << 20     # of a big body per turn of the loop, so a 1 GiB upload never holds the loop for long
FIRST_BYTES = 16    # what a big body is judged by


def _npy(first, length):
    return first.startswith(b"\x93NUMPY")


def _bundle(first, length):  # safetensors: the JSON header's length (8 bytes, little-endian), then the header
    return first[8:9] == b"{" and 8 + int.from_bytes(first[:8], "little") <= length


def _cli(first, length):
    return first.startswith(protocol.CLI_FORMAT + b"\0")


def _json(first, length):
    return first.lstrip(b" \t\r\n")[:1] in (b"{", b"")  # all blanks so far: the handler judges


# What a big body must be, by method and path (or path prefix ending in /): (the format in words, the test of
# its first bytes and length, the error code the route's handler gives such a body, a hint). One row per
# format; /v1/files takes any bytes (the caller's own files), /v1/bundle/export a few handles.
FORMATS = {
    ("POST", "/v1/tensors"): ("an .npy array (numpy.save: it begins with b'\\x93NUMPY')", _npy, "bad_request",
                             "send one array saved with numpy.save; .pt files go through `torch load FILE`"),
    ("POST", "/v1/bundle/import"): ("a torchsh bundle (a safetensors stream)", _bundle, "file_error",
                                    "send what POST /v1/bundle/export returned"),
    ("POST", protocol.CLI_PATH): ("a %s body" % protocol.CLI_FORMAT.decode(), _cli, "bad_request", None),
    ("POST", "/v1/ops/"): ("a JSON object", _json, "bad_request", None),
}


class Refused(Exception):
    """A big body refused as it begins: the error to answer with (in its door's words) before draining."""

    def __init__(self, code, message, hint, json_body):
        super().__init__(message)
        self.code, self.message, self.hint, self.json_body = code, message, hint, json_body


class Bodies:
    def __init__(self, app):
        self.app = app
        self.arriving = 0  # bytes of the admitted bodies being read now
        self.slice = memoryview(bytearray(SLICE))  # what a turn of the loop reads lands here, then on its body

    def begin(self, conn, max_body):
        """conn.buf holds a request not yet whole. When its head is here and announces a big body: admit the
        body, give it a buffer of its own (what came behind the head moves there; read() adds the rest) and
        judge it once its first bytes are here. Raises Refused."""
        head = http.parse_head(conn.buf, max_body)  # a bad head raised already, in the server's parse
        if head is None or head[5] < BIG_BODY:
            return
        self._admit(conn, head)
        conn.head, conn.body = head, conn.buf[head[4]:]
        del conn.buf[:]
        if len(conn.body) >= FIRST_BYTES:
            _judge(conn)

    def read(self, conn):
        """The next slice of conn's big body, from its socket onto its buffer. -> the Request once the body
        is whole, else None. Raises EOFError when the client left, Refused when its first bytes say no.
        The buffer grows by what arrives (bytearray(N) would write N zeros first: 0.5 s for 1 GiB)."""
        have = len(conn.body)
        n = conn.recv_into_nowait(self.slice, min(SLICE, conn.head[5] - have))
        if n is None:
            return None
        if not n:
            raise EOFError
        if n >= 1 << 16:  # a body arriving in good pieces earns more time (its door's request_s)
            conn.deadline = time.monotonic() + conn.door.request_s
        conn.body += self.slice[:n]
        if have < FIRST_BYTES <= have + n:
            _judge(conn)
        if have + n < conn.head[5]:
            return None
        request = http.request_of(conn.head, conn.body)
        self.release(conn)
        return request

    def _admit(self, conn, head):
        """Reserve the body against the memory budget; Refused (out_of_memory) when what the daemon uses,
        plus the bodies arriving, plus this one would exceed it."""
        length, budget = head[5], getattr(self.app, "memory", None)
        if budget is None or budget.limit is None:
            return
        in_use = memory.rss_bytes() + self.arriving
        if in_use + length > budget.limit:
            budget.refused += 1
            err = memory.over_budget(length, in_use, budget.limit, budget.rule)
            message = err.message.replace("output of", "a request body of", 1)
            raise Refused(err.code, message, err.hint, _path(head) != protocol.CLI_PATH)
        conn.reserved = length
        self.arriving += length

    def release(self, conn):
        """The body arrived whole (its handler's memory is RSS now), or its connection went."""
        self.arriving -= conn.reserved
        conn.reserved, conn.head, conn.body = 0, None, None


def _path(head):
    return http.Request(head[0], head[1], {}).path


def _judge(conn):
    """Refused unless the body's first bytes are what its route takes (FORMATS)."""
    method, path = conn.head[0], _path(conn.head)
    rule = FORMATS.get((method, path)) or FORMATS.get((method, path.rsplit("/", 1)[0] + "/"))
    first = bytes(conn.body[:FIRST_BYTES])
    if rule is None or rule[1](first, len(conn.body)):
        return
    what, _, code, hint = rule
    message = "the body of %s %s is not %s: it begins %r (refused before the rest of its %d bytes)" % (
        method, path, what, first[:8], conn.head[5])
    raise Refused(code, message, hint, path != protocol.CLI_PATH)
