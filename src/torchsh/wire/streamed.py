"""A reply sent in pieces as they are made: `torch serve --openai`'s streamed completions (Server-Sent Events),
framed with HTTP/1.1's chunked transfer coding, so that the connection stays open for the client's next request.

A handler returns Streamed(attach, ...); the worker calls attach(stream) once with a ChunkedStream, and the
handler's side writes to it from any thread: write(data) sends one chunk without waiting, end() the last one
and gives the connection back (daemon/workers.py). Nothing waits on a slow client: what the socket does not
take at once waits in the stream (up to MAX_PENDING bytes; past that the client counts as gone) and goes
with the next write, or, at end(), to a sender thread. A write that would block under TLS is retried with the
same bytes, as OpenSSL requires.
"""
import threading
from dataclasses import dataclass, field

from torchsh.wire.http import REASONS

MAX_PENDING = 4 << 20  # bytes a client may leave unread before its stream counts as gone


@dataclass
class Streamed:
    """A reply whose body is written after the handler returned, chunk by chunk (see the module's doc)."""
    attach: object
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict = field(default_factory=dict)

    def head(self, keep_alive=True):
        extra = "".join("%s: %s\r\n" % kv for kv in self.headers.items())
        return ("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache\r\n%s%s"
                "\r\n" % (self.status, REASONS.get(self.status, "Status"), self.content_type, extra,
                          "" if keep_alive else "Connection: close\r\n")).encode()


class ChunkedStream:
    """One streamed reply on its connection. conn: what sends (send_nowait(view) -> bytes taken; OSError when
    the client left); finish(rest, keep): called once at end() with the bytes not yet sent (b"" when none)
    and whether the connection stays open."""

    def __init__(self, conn, keep, streamed, finish):
        self.conn, self.keep, self.finish = conn, keep, finish
        self.lock = threading.Lock()
        self.pending, self.attempt = bytearray(streamed.head(keep)), 0
        self.gone = self.ended = False
        with self.lock:
            self._flush()

    def write(self, data):
        """Send DATA as one chunk (never waiting); False once the client is gone (stop writing, then end())."""
        with self.lock:
            if self.gone or self.ended:
                return False
            if data:
                self.pending += b"%x\r\n" % len(data) + data + b"\r\n"
                self._flush()
            if len(self.pending) > MAX_PENDING:
                self.gone = True
            return not self.gone

    def end(self):
        """The last chunk; the connection goes back (closed when the client was gone). Only the first call counts."""
        with self.lock:
            if self.ended:
                return
            self.ended = True
            if not self.gone:
                self.pending += b"0\r\n\r\n"
                self._flush()
            rest, keep = (b"", False) if self.gone else (bytes(self.pending), self.keep)
            self.pending = bytearray()
        self.finish(rest, keep)

    def _flush(self):
        if not self.pending:
            return
        size = self.attempt or len(self.pending)
        try:
            sent = self.conn.send_nowait(memoryview(bytes(self.pending[:size])))
        except OSError:
            self.gone = True
            return
        del self.pending[:sent]
        self.attempt = size if sent == 0 else 0  # nothing taken: the same bytes next time (TLS)
