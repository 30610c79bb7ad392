"""The daemon's I/O: one event-loop thread owns every socket while a request arrives; whole requests
go to worker threads; tensor work serializes on App.tensor_lock inside the handlers.

Why a loop: with a thread per connection idle ones occupy every thread, and starting threads under load
failed and killed the daemon; here an idle connection costs a descriptor and a buffer.
Limits per connection (docs/security.md):
  - CONNECTION_LIMIT open Unix-socket connections (FAST_CONNECTION_LIMIT on the fast path); one more,
    or one when out of file descriptors (EMFILE), is answered 503 `overloaded` and closed.
  - REQUEST_S to deliver a whole request once its first byte arrived (a body arriving in 64 KiB pieces
    earns more time); then 408 `request_timeout` and closed: a slow drip is cut.
  - IDLE_S without a request (before the first one, or between kept-alive ones): closed quietly.
  - FAST_HEAD_S for the fast path's token-bearing head (from accept); SEND_S for a client to take its
    reply (SO_SNDTIMEO). A big body is admitted against the memory budget and judged by its first bytes as
    it begins, then read into its own buffer a slice per loop turn (daemon/bodies.py).
Unix-socket peers of another uid are refused (403 `forbidden`, logged): PostgreSQL's peer rule.

Whole requests go to daemon/workers.py (two pools, by the route table's `lockfree`, handed in with
`dispatch`); one whose client left while it waited for the lock is dropped unrun (App.Cancelled).
Stopping: new connections get 503, idle ones close, requests taken finish (GRACE_S at most).
"""
import errno
import logging
import os
import selectors
import socket
import struct
import time

from torchsh import jobs, protocol
from torchsh.daemon import http
from torchsh.daemon.bodies import Bodies, Refused
from torchsh.daemon.conn import Conn, Drain, Spare, error_bytes
from torchsh.daemon.fastpath import NOT_FOUND, REFUSED, gate, quickack
from torchsh.daemon.routes import dispatch, lockfree
from torchsh.daemon.watch import SocketWatch
from torchsh.daemon.workers import Workers

log = logging.getLogger("torchd")
MAX_BODY = protocol.MAX_BODY  # 4 GiB: bulk .npy uploads
FAST_MAX_BODY = 64 << 20    # argv and stdin handles only; bulk data goes through the Unix socket
CONNECTION_LIMIT = 1024
FAST_CONNECTION_LIMIT = 256
REQUEST_S = 30.0
IDLE_S = 600.0
FAST_HEAD_S = 5.0
SEND_S = 30.0
GRACE_S = protocol.stop_grace_s(os.environ.get(protocol.STOP_GRACE_ENV))  # 10 s by default
DRAIN_S, DRAIN_LIMIT = 1.0, 64  # a refused connection is read (and dropped) this long; this many at once
LINGER_S = 0.002           # a worker waits this long for a kept-alive connection's next request
TICK_S = 0.5                # deadlines, the socket file and the TTL are checked this often


class Server:
    def __init__(self, app, listener):
        self.app = app
        self.uid = os.getuid()
        self.sel = selectors.DefaultSelector()
        self.drain = Drain(self.sel, DRAIN_S, DRAIN_LIMIT)  # refused sockets, read and dropped a while
        self.reading = {}           # fd -> Conn the loop is reading a request from
        self.open = {False: 0, True: 0}   # open connections, Unix socket (False) and fast path (True)
        self.busy = 0               # connections a worker holds
        self.bodies = Bodies(app, REQUEST_S)  # big bodies: admitted, judged and read as they begin
        self.stopping_at = None     # monotonic deadline of the grace period once stopping
        self.fast_listener = None
        self.spare = Spare()  # a descriptor in reserve, for refusing when out of them
        self.listener = listener
        self.watch = SocketWatch(app.socket_path)
        self.workers = Workers(app, dispatch, lockfree, MAX_BODY)  # the module's names: tests stub them
        app.io_stats = self.stats
        app.tensor_thread = self.workers

    def stats(self):
        return {"connections": self.open[False], "connection_limit": CONNECTION_LIMIT,
                "fast_connections": self.open[True], "fast_connection_limit": FAST_CONNECTION_LIMIT,
                "in_flight": self.busy, "queued": self.workers.queued() + self.app.lock_waiters(),
                "timeouts_s": {"request": REQUEST_S, "idle": IDLE_S, "fast_head": FAST_HEAD_S}}

    # ---- the loop (one thread: the daemon's main thread)
    def serve(self):
        """Serve until stopped (daemon stop, SIGTERM, TTL) and the grace period is over."""
        self._listen(self.listener, fast=False)
        self.sel.register(self.workers.wake_r, selectors.EVENT_READ, "wake")
        next_tick = 0.0
        while True:
            if self.app.stop_event.is_set() and self.stopping_at is None:
                self._begin_stop()
            if self.stopping_at is not None and self._stopped():
                return
            if self.fast_listener is None and self.app.fastpath is not None and self.stopping_at is None:
                self.fast_listener = self.app.fastpath.listener
                self._listen(self.fast_listener, fast=True)
            for key, _ in self.sel.select(TICK_S):
                try:
                    self._event(key)
                except Exception:  # MemoryError on a buffer, a bug: lose that connection, never the daemon
                    log.exception("server loop")
                    if isinstance(key.data, Conn):
                        self._close(key.data)
            now = time.monotonic()
            if now >= next_tick:
                next_tick = now + TICK_S
                self._tick(now)

    def _listen(self, listener, fast):
        listener.listen(1024)  # a burst of connects waits in the backlog, not in ECONNREFUSED/EAGAIN
        listener.setblocking(False)
        self.sel.register(listener, selectors.EVENT_READ, "fast" if fast else "unix")

    def _event(self, key):
        if key.data == "wake":
            for conn, keep in self.workers.taken_back():
                self._taken_back(conn, keep)
        elif key.data in ("unix", "fast"):
            self._accept(key.fileobj, key.data == "fast")
        elif key.data == "drain":
            self.drain.read(key.fileobj)
        else:
            self._readable(key.data)

    def _tick(self, now):
        self.drain.expire(now)
        for conn in [c for c in self.reading.values() if now >= c.deadline]:
            if conn.buf and conn.authorized:  # a request had begun: say why it is cut
                self._refuse(conn, error_bytes("request_timeout", "the request did not arrive within %gs" % REQUEST_S))
            else:
                self._close(conn)
        if self.stopping_at is not None:
            return
        if self.app.expired():
            log.info("idle for %.0fs (ttl): exiting", self.app.idle_seconds())
            self.app.request_stop()
        new = self.watch.check()
        if new is False:
            self.app.request_stop()
        elif new is not None:
            self.sel.unregister(self.listener)
            self.listener.close()
            self.listener = new
            self._listen(new, fast=False)

    def _stopped(self):
        """Stopping, and every request taken answered and every job ended, or the grace period over."""
        if self.busy == 0 and not jobs.any_running():
            return True
        if time.monotonic() > self.stopping_at:
            log.warning("grace period over: %d request(s), jobs %s; exiting", self.busy, jobs.any_running())
            return True
        return False

    def _begin_stop(self):
        """Answer what was taken; take nothing new. New connections get 503 until the grace ends."""
        self.stopping_at = time.monotonic() + GRACE_S
        self.workers.stopping = True
        running = jobs.stop_all("the daemon is stopping")  # each stops at its next step boundary, checkpointed
        log.info("stopping: %d request(s) in flight and %d job(s) running, up to %gs to finish",
                 self.busy, running, GRACE_S)
        for conn in list(self.reading.values()):
            conn.on_close = None  # what they hold ends with the daemon (or is saved with its session)
            self._close(conn)

    # ---- accepting
    def _accept(self, listener, fast):
        for _ in range(64):  # a bounded batch: reads and timeouts get their turn under a flood
            try:
                sock, _ = listener.accept()
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self.spare.shed(listener, e)
                    return
                if e.errno in (errno.ECONNABORTED, errno.EINTR, errno.EPROTO):
                    continue
                raise
            try:
                self._admit(sock, fast)
            except (OSError, MemoryError) as e:
                log.warning("dropped a new connection: %s", e)
                sock.close()

    def _admit(self, sock, fast):
        if self.stopping_at is not None:
            return self.drain.refuse(sock, error_bytes("overloaded", "the daemon is stopping", "retry in a moment"))
        if self.open[fast] >= (FAST_CONNECTION_LIMIT if fast else CONNECTION_LIMIT):
            return self.drain.refuse(sock, b"" if fast else error_bytes(
                "overloaded", "%d connections are open, the limit" % CONNECTION_LIMIT, "retry shortly"))
        pid = uid = None
        if fast:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if uid != self.uid:
                log.warning("refused a connection from uid %d (pid %d): this daemon serves uid %d only",
                            uid, pid, self.uid)
                return self.drain.refuse(sock, error_bytes("forbidden", "this daemon serves uid %d only" % self.uid))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(SEND_S), 0))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, int(LINGER_S * 1e6)))
        now = time.monotonic()
        conn = Conn(sock, fast, now + (FAST_HEAD_S if fast else IDLE_S), pid, uid)
        self.open[fast] += 1
        self.reading[sock.fileno()] = conn
        self.sel.register(sock, selectors.EVENT_READ, conn)

    # ---- reading a request
    def _readable(self, conn):
        if conn.body is not None:  # a big body: its next slice, straight into its own buffer
            return self._body_slice(conn)
        try:
            if conn.fast:
                quickack(conn.sock)
            chunk = conn.sock.recv(1 << 20 if len(conn.buf) >= 1 << 16 else 1 << 16, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            return self._close(conn)
        if conn.authorized and (not conn.buf or len(chunk) >= 1 << 16):
            conn.deadline = time.monotonic() + REQUEST_S  # the clock starts at a request's first byte
        conn.buf += chunk
        self._parse(conn)

    def _parse(self, conn):
        try:
            if not conn.authorized and not self._fast_gate(conn):
                return
            parsed = http.parse_request(conn.buf, FAST_MAX_BODY if conn.fast else MAX_BODY)
            if parsed is None:  # a big body that begins is admitted and judged by its first bytes, or refused
                return self.bodies.begin(conn, FAST_MAX_BODY if conn.fast else MAX_BODY)
        except http.HTTPError as e:
            json_body = not conn.buf.startswith(b"POST %s " % protocol.CLI_PATH.encode())
            return self._refuse(conn, b"" if conn.fast else error_bytes(e.code, str(e), json_body=json_body))
        except Refused as e:
            return self._refuse(conn, e.reply)
        request, used = parsed
        del conn.buf[:used]
        self._submit(conn, request)

    def _body_slice(self, conn):
        try:
            request = self.bodies.read(conn)
        except EOFError:
            return self._close(conn)
        except Refused as e:
            return self._refuse(conn, e.reply)
        if request is not None:
            self._submit(conn, request)

    def _submit(self, conn, request):
        request.peer_pid, request.peer_uid, request.hold = conn.peer_pid, conn.peer_uid, conn.hold
        if conn.fast and (request.method != "POST" or request.path != protocol.CLI_PATH):
            return self._refuse(conn, NOT_FOUND)
        self.sel.unregister(conn.sock)
        del self.reading[conn.sock.fileno()]
        self.busy += 1
        self.workers.submit(conn, request)

    def _fast_gate(self, conn):
        """The fast path's token is checked on the head alone, before any body is read (fastpath.gate)."""
        verdict = gate(self.app.fastpath, conn)
        if verdict == "ok":
            conn.deadline = time.monotonic() + REQUEST_S
        elif verdict == "close":
            self._close(conn)
        elif verdict == "refuse":
            self._refuse(conn, REFUSED)
        return verdict == "ok"

    def _taken_back(self, conn, keep):
        self.busy -= 1
        if not keep or self.stopping_at is not None:
            return self._close(conn, registered=False)
        conn.deadline = time.monotonic() + IDLE_S if conn.on_close is None else float("inf")  # held: never idle
        self.reading[conn.sock.fileno()] = conn
        self.sel.register(conn.sock, selectors.EVENT_READ, conn)
        if conn.buf:  # a pipelined request already here
            conn.deadline = time.monotonic() + REQUEST_S
            self._parse(conn)

    def _refuse(self, conn, data):
        conn.closed()
        self.bodies.release(conn)
        if self.reading.pop(conn.sock.fileno(), None) is not None:
            self.sel.unregister(conn.sock)
        self.open[conn.fast] -= 1
        self.drain.refuse(conn.sock, data)

    def _close(self, conn, registered=True):
        conn.closed()
        self.bodies.release(conn)
        if registered and self.reading.pop(conn.sock.fileno(), None) is not None:
            self.sel.unregister(conn.sock)
        self.open[conn.fast] -= 1
        conn.sock.close()

    def close(self):
        """After serve(): close the listener and the loop's own descriptors."""
        self.listener.close()
        self.workers.stop()
