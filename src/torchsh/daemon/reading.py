"""The server loop's half that reads one connection (daemon/server.py's Server is a Reading): a request read
until whole under its door's checks, handed to a worker, the connection taken back for its next request,
and refusals and closes. The loop thread alone runs this: no lock.

A door that asks for a token (doors.Door.gate) checks it on each request's head, before a byte of the body
is read; the first time, the connection leaves the waiting and takes a slot (503 with Retry-After when none
is free). A door whose token is a connection's first line (doors.Door.preamble: `torchd --listen`) checks
that line once, before any HTTP; after it, the connection is served as the Unix socket's are. A request
that is not a route of its door (doors.Door.screen) is refused before it reaches a worker. A TLS
connection's handshake is stepped here too, without blocking (tlsconn.TLSConn).
"""
import logging
import selectors
import time

from torchsh import protocol
from torchsh.daemon.bodies import Bodies, Refused
from torchsh.daemon.conn import DRAIN_LIMIT, DRAIN_S, Drain
from torchsh.daemon.fastpath import quickack
from torchsh.wire import http
from torchsh.wire.doors import PREAMBLE_MAX

log = logging.getLogger("torchd")


class Reading:
    def __init__(self, app, workers):
        self.sel = selectors.DefaultSelector()
        self.drain = Drain(self.sel, DRAIN_S, DRAIN_LIMIT)  # refused sockets, read and dropped a while
        self.reading = {}       # fd -> Conn the loop is reading a request from
        self.ready = set()      # TLS connections holding bytes their sockets no longer show (Conn.pending)
        self.busy = 0           # connections a worker holds
        self.bodies = Bodies(app)  # big bodies: admitted, judged and read as they begin
        self.workers = workers
        self.stopping_at = None  # monotonic deadline of the grace period once stopping

    def _readable(self, conn):
        if conn.handshaking:
            return self._handshake(conn)
        if conn.body is not None:  # a big body: its next slice, straight into its own buffer
            return self._body_slice(conn)
        if conn.door.quickack:
            quickack(conn.sock)
        chunk = conn.recv_nowait(1 << 20 if len(conn.buf) >= 1 << 16 else 1 << 16)
        if chunk is None:
            return
        if not chunk:
            return self._close(conn)
        if conn.authorized and (not conn.buf or len(chunk) >= 1 << 16):
            conn.deadline = time.monotonic() + conn.door.request_s  # the clock starts at a request's first byte
        conn.buf += chunk
        self._parse(conn)

    def _handshake(self, conn):
        try:
            done = conn.handshake()
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError: plain HTTP, a stranger's certificate check
            log.info("tls: handshake with %s on %s failed: %s", conn.peer, conn.door.name, e)
            return self._close(conn)
        if done is None:  # it waits to write: select for that too
            self.sel.modify(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)
        elif done:
            self.sel.modify(conn.sock, selectors.EVENT_READ, conn)
            self.ready.add(conn)  # the request may have come with the handshake's last bytes

    def _parse(self, conn):
        door = conn.door
        try:
            if door.preamble is not None and not conn.authorized and not self._first_line(conn):
                return
            if door.gate is not None and not conn.gated and not self._gate(conn):
                return
            parsed = http.parse_request(conn.buf, door.max_body)
            if parsed is None:  # a big body that begins is admitted and judged by its first bytes, or refused
                return self.bodies.begin(conn, door.max_body)
        except http.HTTPError as e:
            return self._refuse(conn, door.refusal(e.code, str(e), None, json_body(conn)))
        except Refused as e:
            return self._refuse(conn, door.refusal(e.code, e.message, e.hint, e.json_body))
        request, used = parsed
        del conn.buf[:used]
        self._submit(conn, request)

    def _gate(self, conn):
        """The door's token, checked on the request's head alone. False: half a head so far, or refused."""
        door = conn.door
        end = conn.buf.find(b"\r\n\r\n", 0, http.MAX_HEAD)
        if end < 0:
            if len(conn.buf) >= http.MAX_HEAD:
                raise http.HTTPError("request head over %d bytes" % http.MAX_HEAD, "too_large")
            return False
        first = door.gate(bytes(conn.buf[:end]))
        if first is None:
            self._refuse(conn, door.refused)
            return False
        if not conn.authorized:
            if not door.take_slot(conn):
                self._refuse(conn, door.refusal("overloaded", "%d connections are open on %s, the limit"
                                                % (door.slots, door.name), "retry shortly"))
                return False
            conn.deadline = time.monotonic() + door.request_s  # from the head deadline to the request's
        if first:  # a 100 Continue: far less than a socket buffer
            conn.send_nowait(first)
        conn.gated = True
        return True

    def _first_line(self, conn):
        """The door's first line (`--listen`'s token line), once a connection, before any HTTP: answered, and
        the connection then holds a slot and waits idle_s for a request. False: half a line so far, or refused
        (its answer sent, then closed; past the slots, closed unanswered: the client reads no answer at all,
        not one it could take for the first bytes of HTTP)."""
        door = conn.door
        end = conn.buf.find(b"\n", 0, PREAMBLE_MAX)
        if end < 0 and len(conn.buf) < PREAMBLE_MAX:
            return False
        line = bytes(conn.buf[:end + 1 if end >= 0 else PREAMBLE_MAX])
        accepted, answer = door.preamble(line)
        if not accepted:
            log.warning("refused %s on %s: wrong token", conn.peer, door.name)
            self._refuse(conn, answer)
            return False
        if not door.take_slot(conn):
            log.warning("refused %s on %s: %d connections are open, the limit", conn.peer, door.name, door.slots)
            self._refuse(conn, b"")
            return False
        del conn.buf[:len(line)]
        conn.send_nowait(answer)  # a few bytes: far less than a socket buffer
        conn.deadline = time.monotonic() + (door.request_s if conn.buf else door.idle_s)
        return True

    def _body_slice(self, conn):
        try:
            request = self.bodies.read(conn)
        except EOFError:
            return self._close(conn)
        except Refused as e:
            return self._refuse(conn, conn.door.refusal(e.code, e.message, e.hint, e.json_body))
        if request is not None:
            return self._submit(conn, request)
        if conn.pending():
            self.ready.add(conn)

    def _submit(self, conn, request):
        request.peer_pid, request.peer_uid, request.hold = conn.peer_pid, conn.peer_uid, conn.hold
        refusal = conn.door.screen(request) if conn.door.screen is not None else None
        if refusal is not None:
            return self._refuse(conn, refusal)
        conn.gated = False  # the next request on it shows the token again
        self.sel.unregister(conn.sock)
        del self.reading[conn.sock.fileno()]
        self.busy += 1
        self.workers.submit(conn, request)

    def _taken_back(self, conn, keep):
        self.busy -= 1
        if not keep or self.stopping_at is not None or conn.door.closed:
            return self._close(conn)
        conn.deadline = time.monotonic() + conn.door.idle_s if conn.on_close is None else float("inf")  # held
        self.reading[conn.sock.fileno()] = conn
        self.sel.register(conn.sock, selectors.EVENT_READ, conn)
        if conn.buf:  # a pipelined request already here
            conn.deadline = time.monotonic() + conn.door.request_s
            self._parse(conn)
        elif conn.pending():
            self.ready.add(conn)

    def _refuse(self, conn, data):
        """Answer data (in the door's words) and drain the connection before it closes."""
        self._forget(conn)
        conn.send_last(data)
        self.drain.refuse(conn.sock, b"")

    def _close(self, conn):
        self._forget(conn)
        conn.sock.close()

    def _forget(self, conn):
        conn.closed()
        self.bodies.release(conn)
        self.ready.discard(conn)
        if self.reading.get(conn.sock.fileno()) is conn:
            del self.reading[conn.sock.fileno()]
            self.sel.unregister(conn.sock)
        conn.door.release(conn)


def json_body(conn):
    """A refusal on the Unix socket is a CLI line for /v1/cli, JSON for the API."""
    return not conn.buf.startswith(b"POST %s " % protocol.CLI_PATH.encode())
