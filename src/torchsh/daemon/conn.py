"""A connection's state while the server reads it, the replies the server sends on its own (before any
handler ran: limits, timeouts, framing errors, the peer check), and the spare descriptor for refusing."""
import json
import logging
import os
import selectors
import socket
import time

from torchsh import protocol
from torchsh.daemon import http
from torchsh.errors import TorchshError

log = logging.getLogger("torchd")


class Conn:
    __slots__ = ("sock", "fast", "buf", "deadline", "peer_pid", "peer_uid", "authorized", "reserved", "head", "body",
                 "on_close")

    def __init__(self, sock, fast, deadline, peer_pid=None, peer_uid=None):
        self.sock, self.fast, self.buf, self.deadline = sock, fast, bytearray(), deadline
        self.peer_pid, self.peer_uid, self.authorized = peer_pid, peer_uid, not fast
        self.reserved = 0  # bytes of memory budget held for the big body now arriving (daemon/bodies.py)
        self.head, self.body = None, None  # that body's parsed head and its buffer (what arrived of it)
        self.on_close = None  # what ends when this connection drops (a block's scope: hold); it is never idle

    def hold(self, end):
        """Run end() when this connection closes: the client holds it open for as long as what it owns
        lives (`torch scope -- CMD`: the exec reply's connection, until `scope end`), and a client killed
        outright drops it, as PostgreSQL rolls back a disconnected client's transaction."""
        self.on_close = (self.on_close or []) + [end]

    def closed(self):
        """The connection is gone: end what it held."""
        ends, self.on_close = self.on_close or (), None
        for end in ends:
            try:
                end()
            except Exception:  # one failure must not keep the others, or the loop, from going on
                log.exception("ending what a closed connection held")

    def client_gone(self):
        """True when the peer closed its end: EOF (or an error) waits where a request would be.
        (A client that half-closes after sending its request counts as gone: HTTP clients do not.)"""
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True


def error_bytes(code, message, hint=None, json_body=False):
    """A reply for an error the server itself answers, before any handler ran. The standalone client
    prints a CLI-shaped body as its one error line and exits with Torchsh-Exit; JSON-API requests get
    the JSON error body (json_body)."""
    err = TorchshError(code, message, hint, op="daemon")
    if json_body:
        body, ctype = json.dumps(err.to_json(), separators=(",", ":")).encode(), "application/json"
    else:
        body, ctype = (err.line() + "\n").encode(), "text/plain"
    headers = {protocol.H_EXIT: str(protocol.exit_status(code)), protocol.H_STDOUT: "0", "Torchsh-Error": code}
    return http.Response(protocol.http_status(code), body, ctype, headers).to_bytes(keep_alive=False)


def refuse_now(sock, data):
    """Answer a connection we will not serve, without blocking the loop, and close it."""
    try:
        if data:
            sock.send(data, socket.MSG_DONTWAIT)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    sock.close()


class Drain:
    """Refused sockets: send a last reply and half-close, then read and drop what the client still
    sends for up to `seconds`: closing at once would fail its write (EPIPE) before it could read the
    reply. At most `limit` at once; past that, refused sockets close at once."""

    def __init__(self, sel, seconds, limit):
        self.sel, self.seconds, self.limit = sel, seconds, limit
        self.draining = {}  # fd -> (socket, deadline)

    def refuse(self, sock, data):
        try:
            if data:
                sock.send(data, socket.MSG_DONTWAIT)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return sock.close()
        if len(self.draining) >= self.limit:
            return sock.close()
        self.draining[sock.fileno()] = (sock, time.monotonic() + self.seconds)
        self.sel.register(sock, selectors.EVENT_READ, "drain")

    def read(self, sock, force=False):
        """The selector says `sock` is readable: drop what came; close it at EOF (or when forced)."""
        try:
            more = not force and sock.recv(1 << 16, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            more = False
        if not more:
            self.sel.unregister(sock)
            del self.draining[sock.fileno()]
            sock.close()

    def expire(self, now):
        for sock, _ in [v for v in self.draining.values() if now >= v[1]]:
            self.read(sock, force=True)


class Spare:
    """A descriptor kept in reserve. Out of descriptors (EMFILE), accept() fails and the backlog would spin
    the loop: the spare is closed to accept one connection and refuse it, then taken again."""

    def __init__(self):
        self.fd = _open_spare()
        self.last_log = 0.0

    def shed(self, listener, err):
        if time.monotonic() - self.last_log > 1.0:
            self.last_log = time.monotonic()
            log.warning("accept failed (%s): refusing connections until descriptors free up", err)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        try:
            sock, _ = listener.accept()
            refuse_now(sock, error_bytes("overloaded", "the daemon is out of file descriptors", "retry shortly"))
        except OSError:
            time.sleep(0.01)  # nothing to do but not spin at full speed
        self.fd = _open_spare()


def _open_spare():
    try:
        return os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
