"""A connection of a TLS door (`torch serve --port --host` beyond loopback): the handshake is done by the
server's loop without blocking it, within the door's head deadline, and every read and write after it goes
through the TLS object (conn.Conn's methods, overridden).

Its socket stays non-blocking throughout (a TLS object takes no MSG_DONTWAIT): the loop reads what has
arrived, a worker that lingers for a kept-alive connection's next request polls its descriptor for LINGER_S,
and a sender thread that finishes a big reply polls it for SEND_S at most. OpenSSL may hold decrypted bytes
the descriptor no longer shows (pending()): the loop reads those without waiting for readability. A write
that would block is retried with the same bytes, as OpenSSL requires.
"""
import select
import ssl
import time

from torchsh.daemon.conn import LINGER_S, SEND_S, Conn

_WOULD_BLOCK = (ssl.SSLWantReadError, ssl.SSLWantWriteError)


class TLSConn(Conn):
    __slots__ = ("handshaking",)

    def __init__(self, sock, door, deadline, peer=None):
        super().__init__(sock, door, deadline, peer=peer)
        self.handshaking = True

    def handshake(self):
        """One step of the handshake: True once done, False while it waits for the peer (None: it waits to
        write, so the loop also selects for writability). ssl.SSLError (an OSError) when it failed."""
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:
            return False
        except ssl.SSLWantWriteError:
            return None
        self.handshaking = False
        return True

    def recv_nowait(self, size):
        try:
            data = self.sock.recv(size)
        except _WOULD_BLOCK:
            return None  # a record not yet whole
        except (OSError, ValueError):
            return b""
        while data and self.sock.pending():  # the rest of the record, or the loop would not see it
            data += self.sock.recv(self.sock.pending())
        return data

    def recv_into_nowait(self, view, size):
        try:
            return self.sock.recv_into(view, size)
        except _WOULD_BLOCK:
            return None
        except (OSError, ValueError):
            return 0

    def send_nowait(self, view):
        try:
            return self.sock.send(view)
        except _WOULD_BLOCK:
            return 0  # nothing taken: the same bytes are sent again (a sender thread's send_all)

    def send_all(self, piece):
        view, deadline = memoryview(piece), time.monotonic() + SEND_S
        while view:
            try:
                view = view[self.sock.send(view):]
            except ssl.SSLWantWriteError:
                self._wait(select.POLLOUT, deadline)
            except ssl.SSLWantReadError:
                self._wait(select.POLLIN, deadline)

    def recv_linger(self):
        if not self.sock.pending() and not self._ready(select.POLLIN, LINGER_S):
            return None
        return self.recv_nowait(1 << 16)

    def pending(self):
        return not self.handshaking and self.sock.pending() > 0

    def send_last(self, data):
        """The refusal, then TLS's close_notify: the client reads the reply, then the end of the stream."""
        try:
            if data and not self.handshaking:
                self.sock.send(data)
            if not self.handshaking:
                self.sock.unwrap()
        except (OSError, ValueError):
            pass  # close_notify sent, the peer's not yet here (SSLWantReadError), or the client left

    def _wait(self, event, deadline):
        if not self._ready(event, deadline - time.monotonic()):
            raise TimeoutError("the client took none of its reply for %gs" % SEND_S)

    def _ready(self, event, seconds):
        poller = select.poll()
        poller.register(self.sock, event)
        return bool(poller.poll(max(0.0, seconds) * 1000))
