"""A connection's state while the server reads it and its I/O (the loop's reads, a worker's and a sender's
writes; a TLS door's: tlsconn.py), the replies the server sends on its own (before any handler ran: limits,
timeouts, framing errors, the peer check), refusals drained before they close, and the spare descriptor for
refusing."""
import json
import logging
import os
import select
import selectors
import socket
import time

from torchsh import protocol
from torchsh.errors import TorchshError
from torchsh.wire import http
from torchsh.wire.doors import RETRY_AFTER_S

log = logging.getLogger("torchd")
SEND_S = 30.0      # for a client to take its reply (SO_SNDTIMEO)
LINGER_S = 0.002   # a worker waits this long for a kept-alive connection's next request (SO_RCVTIMEO)
SPIN_S = 0.00005   # of that, it polls this long before it sleeps in recv (see _spin_recv)
DRAIN_S, DRAIN_LIMIT = 1.0, 1024  # a refused connection is read (and dropped) this long; this many at once


class Conn:
    """A connection the loop reads and a worker answers. Its I/O goes through these methods, so that a TLS
    door's (tlsconn.TLSConn) reads and writes go through its TLS object instead."""
    __slots__ = ("sock", "door", "peer", "buf", "deadline", "peer_pid", "peer_uid", "authorized", "gated", "reserved",
                 "head", "body", "on_close")
    handshaking = False  # a TLS connection before its handshake is done

    def __init__(self, sock, door, deadline, peer_pid=None, peer_uid=None, peer=None):
        self.sock, self.door, self.buf, self.deadline = sock, door, bytearray(), deadline
        self.peer_pid, self.peer_uid, self.peer = peer_pid, peer_uid, peer  # peer: a TCP door's peer address
        self.authorized = False  # holds a slot of its door (doors.Door: showed the token, or passed at accept)
        self.gated = False  # the request now arriving showed the token (a door with a gate checks every request)
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
            # the socket's own recv: under TLS, the raw bytes (a TLS object refuses flags)
            return socket.socket.recv(self.sock, 1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    # -- I/O: the loop reads without waiting; a worker sends what the socket takes, a sender thread the rest
    def recv_nowait(self, size):
        """What has arrived (b"" at EOF or on an error), or None when nothing has yet."""
        try:
            return self.sock.recv(size, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def recv_into_nowait(self, view, size):
        """Bytes read into view (0 at EOF or on an error), or None when nothing has arrived yet."""
        try:
            return self.sock.recv_into(view, size, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        except OSError:
            return 0

    def send_nowait(self, view):
        """How much of view the socket took now; OSError when the client left."""
        try:
            return self.sock.send(view, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0

    def send_all(self, piece):
        """All of piece, waiting SEND_S at most for the client to take it (SO_SNDTIMEO); OSError otherwise."""
        self.sock.sendall(piece)

    def recv_linger(self):
        """What arrives within LINGER_S (SO_RCVTIMEO): b"" at EOF; None when nothing came; OSError on an error."""
        chunk = _spin_recv(self.sock)
        if chunk is None:
            try:
                chunk = self.sock.recv(1 << 16)  # blocking, for SO_RCVTIMEO = LINGER_S at most
            except BlockingIOError:
                return None
        return chunk

    def pending(self):
        """Bytes read from the socket but not yet from this connection (a TLS record's rest): the loop
        reads them without waiting for the socket to be readable."""
        return False

    def send_last(self, data):
        """A refusal's bytes, sent without waiting, before the loop drains and closes the connection."""
        try:
            if data:
                self.sock.send(data, socket.MSG_DONTWAIT)
        except OSError:
            pass


def _spin_recv(sock):
    """What arrives within SPIN_S, polled without sleeping (None: nothing yet). A client in a loop sends
    its next request within tens of microseconds, and waking a sleeping thread costs as much again.
    poll(0), not recv(MSG_DONTWAIT): a turn of the loop is 0.4 µs instead of ~2 µs of raising and
    catching BlockingIOError, so a request is seen sooner (tiny train_step over the API: -5 to -11 µs)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    deadline = time.perf_counter() + SPIN_S
    while not poller.poll(0):
        if time.perf_counter() > deadline:
            return None
    return sock.recv(1 << 16, socket.MSG_DONTWAIT)  # b"" at EOF; an error (POLLERR) raises OSError


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
    if code == "overloaded":
        headers["Retry-After"] = str(RETRY_AFTER_S)
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
    sends for up to `seconds`: closing with unread bytes would reset the connection (RST), and its
    client would read the reset, not the reply. At most `limit` at once; past that, a refused socket
    is read once, what has arrived dropped, and closed."""

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
            return self.read(sock, force=True, registered=False)
        self.draining[sock.fileno()] = (sock, time.monotonic() + self.seconds)
        self.sel.register(sock, selectors.EVENT_READ, "drain")

    def read(self, sock, force=False, registered=True):
        """The selector says `sock` is readable: drop what came; close it at EOF (or when forced, once
        what has arrived is dropped)."""
        more = False
        try:
            for _ in range(16 if force else 1):  # forced: what has arrived, within a bound (a flood goes on)
                more = sock.recv(1 << 16, socket.MSG_DONTWAIT)
                if not more:
                    break
        except BlockingIOError:
            more = True
        except OSError:
            more = False
        if force or not more:
            if registered:
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

    def shed(self, listener, err, refusal):
        if time.monotonic() - self.last_log > 1.0:
            self.last_log = time.monotonic()
            log.warning("accept failed (%s): refusing connections until descriptors free up", err)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        try:
            sock, _ = listener.accept()
            refuse_now(sock, refusal)
        except OSError:
            time.sleep(0.01)  # nothing to do but not spin at full speed
        self.fd = _open_spare()


def _open_spare():
    try:
        return os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
