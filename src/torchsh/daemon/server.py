"""The server core: one event-loop thread owns every socket of every door while a request arrives; whole
requests go to worker threads; tensor work serializes on App.tensor_lock inside the handlers.

Doors (wire/doors.py): the Unix socket (made here), the loopback fast path (daemon/fastpath.py), each
`torch serve --port` (serve/tcp.py) and `torchd --listen tls://…` (remote/listener.py: served as the Unix
socket is, once its token line is accepted) are listening sockets of this one loop, each with its policy;
app.doors opens and closes them from other threads.
Why a loop: with a thread per connection idle ones occupy every thread, and starting threads under load
failed and killed the daemon; here an idle connection costs a descriptor and a buffer.
Limits per connection (docs/security.md), each door's own:
  - its slots (the Unix socket: CONNECTION_LIMIT, taken at accept); one more, or one when out of file
    descriptors (EMFILE), is answered 503 `overloaded` with Retry-After.
  - a door that asks for a token checks it in each request's head, before the body is read, or once in
    the connection's first line (--listen); the first within head_s of the accept (a TLS handshake, done
    here without blocking, included). Until then a connection holds no slot (doors.Door.wait).
  - request_s to deliver a whole request once its first byte arrived (a body arriving in 64 KiB pieces
    earns more time), not per read; then 408 `request_timeout` and closed: a slow drip is cut.
  - idle_s without a request (before the first one, or between kept-alive ones): closed quietly.
  - SEND_S for a client to take its reply. A big body is admitted against the memory budget and judged by
    its first bytes as it begins, then read into its own buffer a slice per loop turn (daemon/bodies.py).
Unix-socket peers of another uid are refused (403 `forbidden`, logged): PostgreSQL's peer rule. Every
refusal is drained before its connection closes (conn.Drain): the client reads a reply, never a reset.

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

from torchsh import protocol
from torchsh.daemon.conn import LINGER_S, SEND_S, Conn, Spare, error_bytes
from torchsh.daemon.fastpath import FAST_CONNECTION_LIMIT, FAST_HEAD_S
from torchsh.daemon.reading import Reading
from torchsh.daemon.routes import dispatch, lockfree
from torchsh.daemon.tlsconn import TLSConn
from torchsh.daemon.watch import SocketWatch
from torchsh.daemon.workers import Workers
from torchsh.wire.doors import IDLE_S, REQUEST_S, Door, Doors

log = logging.getLogger("torchd")
MAX_BODY = protocol.MAX_BODY  # 4 GiB: bulk .npy uploads
CONNECTION_LIMIT = 1024
GRACE_S = protocol.stop_grace_s(os.environ.get(protocol.STOP_GRACE_ENV))  # 10 s by default
TICK_S = 0.5                # deadlines, the socket file and the TTL are checked this often


class Server(Reading):
    def __init__(self, app, listener):
        super().__init__(app, Workers(app, dispatch, lockfree))  # the module's names: tests stub them
        self.app = app
        self.uid = os.getuid()
        self.spare = Spare()  # a descriptor in reserve, for refusing when out of them
        self.unix = Door("unix", "unix socket", listener, CONNECTION_LIMIT, MAX_BODY, REQUEST_S, IDLE_S, error_bytes,
                         peer_check=self._same_uid)
        self.open_doors = []  # the doors the loop accepts on
        self.watch = SocketWatch(app.socket_path)
        self.doors = Doors(self.workers.wake)
        app.io_stats = self.stats
        app.tensor_thread = self.workers
        app.doors = self.doors

    def stats(self):
        fast = [d for d in self.open_doors if d.kind == "fast"]
        return {"connections": self.unix.open, "connection_limit": self.unix.slots,
                "fast_connections": sum(d.open + len(d.waiting) for d in fast),
                "fast_connection_limit": FAST_CONNECTION_LIMIT, "doors": [d.stats() for d in self.open_doors],
                "in_flight": self.busy, "queued": self.workers.queued() + self.app.lock_waiters(),
                "timeouts_s": {"request": REQUEST_S, "idle": IDLE_S, "fast_head": FAST_HEAD_S}}

    # ---- the loop (one thread: the daemon's main thread)
    def serve(self):
        """Serve until stopped (daemon stop, SIGTERM, TTL) and the grace period is over."""
        self._open(self.unix)
        self.sel.register(self.workers.wake_r, selectors.EVENT_READ, "wake")
        next_tick = 0.0
        self.doors.running(True)
        try:
            while True:
                if self.app.stop_event.is_set() and self.stopping_at is None:
                    self._begin_stop()
                if self.stopping_at is not None and self._stopped():
                    return
                for key, _ in self.sel.select(0 if self.ready else TICK_S):
                    self._guarded(self._event, key, key.data)
                if self.ready:
                    self._read_ready()
                now = time.monotonic()
                if now >= next_tick:
                    next_tick = now + TICK_S
                    self._tick(now)
        finally:
            self.doors.running(False)

    def _read_ready(self):
        """The TLS connections whose bytes wait in their TLS objects (Conn.pending), not in their sockets."""
        ready, self.ready = self.ready, set()
        for conn in ready:
            if self.reading.get(conn.sock.fileno()) is conn:
                self._guarded(self._readable, conn, conn)

    def _guarded(self, handle, arg, conn):
        """handle(arg); when it fails, conn (the connection it was for, if it was for one) is closed."""
        try:
            handle(arg)
        except Exception:  # MemoryError on a buffer, a bug: lose that connection, never the daemon
            log.exception("server loop")
            if isinstance(conn, Conn):
                self._close(conn)

    def _event(self, key):
        data = key.data
        if isinstance(data, Conn):
            self._readable(data)
        elif isinstance(data, Door):
            self._accept(data)
        elif data == "wake":
            for conn, keep in self.workers.taken_back():
                self._taken_back(conn, keep)
            for what, door, done in self.doors.take():
                if what == "open":
                    self._open(door)
                else:
                    self._shut(door)
                done.set()
        else:  # "drain"
            self.drain.read(key.fileobj)

    def _tick(self, now):
        self.drain.expire(now)
        for conn in [c for c in self.reading.values() if now >= c.deadline]:
            if (conn.buf or conn.body is not None) and not conn.handshaking:  # a request had begun: say why it is cut
                seconds = conn.door.request_s if conn.authorized else conn.door.head_s
                self._refuse(conn, conn.door.refusal_to(conn, "request_timeout", "the request did not arrive "
                                                        "within %gs" % seconds))
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
            self.sel.unregister(self.unix.listener)
            self.unix.listener.close()
            self.unix.listener = new
            self._listen(self.unix)

    def _stopped(self):
        """Stopping, and every request taken answered and every job ended, or the grace period over."""
        if self.busy == 0 and not self.app.jobs.any_running():
            return True
        if time.monotonic() > self.stopping_at:
            log.warning("grace period over: %d request(s), jobs %s; exiting", self.busy, self.app.jobs.any_running())
            return True
        return False

    def _begin_stop(self):
        """Answer what was taken; take nothing new. New connections get 503 until the grace ends."""
        self.stopping_at = time.monotonic() + GRACE_S
        self.workers.stopping = True
        running = self.app.jobs.stop_all("the daemon is stopping")  # each stops at its next step boundary, checkpointed
        log.info("stopping: %d request(s) in flight and %d job(s) running, up to %gs to finish",
                 self.busy, running, GRACE_S)
        for conn in list(self.reading.values()):
            conn.on_close = None  # what they hold ends with the daemon (or is saved with its session)
            self._close(conn)

    # ---- doors
    def _open(self, door):
        self.open_doors.append(door)
        self._listen(door)

    def _listen(self, door):
        door.listener.listen(1024)  # a burst of connects waits in the backlog, not in ECONNREFUSED/EAGAIN
        door.listener.setblocking(False)
        self.sel.register(door.listener, selectors.EVENT_READ, door)

    def _shut(self, door):
        """A door closes (its serve job ended): its listener, and the connections the loop reads on it; those
        a worker holds close when handed back."""
        door.closed = True
        if door in self.open_doors:
            self.open_doors.remove(door)
            self.sel.unregister(door.listener)
        door.listener.close()
        for conn in [c for c in self.reading.values() if c.door is door]:
            self._close(conn)

    # ---- accepting
    def _accept(self, door):
        for _ in range(64):  # a bounded batch: reads and timeouts get their turn under a flood
            try:
                sock, addr = door.listener.accept()
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self.spare.shed(door.listener, e, b"" if door.tls else door.refusal(
                        "overloaded", "the daemon is out of file descriptors", "retry shortly"))
                    return
                if e.errno in (errno.ECONNABORTED, errno.EINTR, errno.EPROTO):
                    continue
                raise
            try:
                self._admit(door, sock, addr)
            except (OSError, MemoryError) as e:
                log.warning("dropped a new connection on %s: %s", door.name, e)
                sock.close()

    def _admit(self, door, sock, addr):
        if self.stopping_at is not None:
            return self._turn_away(door, sock, "the daemon is stopping", "retry in a moment")
        pid = uid = None
        if door.peer_check is not None:
            pid, uid, refusal = door.peer_check(sock)
            if refusal is not None:
                return self.drain.refuse(sock, refusal)
        else:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(SEND_S), 0))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, int(LINGER_S * 1e6)))
        now = time.monotonic()
        if door.passes_at_accept():
            conn = Conn(sock, door, now + door.idle_s, pid, uid)
            if not door.admit(conn):
                return self._turn_away(door, sock, "%d connections are open, the limit" % door.slots, "retry shortly")
        else:  # it waits for its token (in each request's head, or its first line) without a slot
            if door.tls:
                conn = self._tls(door, sock, addr[0], now)
            else:
                conn = Conn(sock, door, now + door.head_s, peer=addr[0])
            victim = door.wait(conn)
            if victim is not None:  # the oldest connection without a token makes room (doors.Door.wait)
                self._refuse(victim, door.refusal_to(victim, "overloaded", "this connection waited longest for its "
                                                     "token on %s, and made room for a new one" % door.name,
                                                     "send the token as soon as connected"))
        self.reading[conn.sock.fileno()] = conn
        self.sel.register(conn.sock, selectors.EVENT_READ, conn)

    def _tls(self, door, sock, peer, now):
        """A TLS door's connection: its handshake waits for the loop's turns (TLSConn.handshake)."""
        sock.setblocking(False)
        return TLSConn(door.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), door,
                       now + door.head_s, peer)

    def _turn_away(self, door, sock, message, hint):
        self.drain.refuse(sock, b"" if door.tls else door.refusal("overloaded", message, hint))

    def _same_uid(self, sock):
        """The Unix socket's peer check (PostgreSQL's peer rule): (pid, uid, None or another uid's refusal)."""
        pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid == self.uid:
            return pid, uid, None
        log.warning("refused a connection from uid %d (pid %d): this daemon serves uid %d only", uid, pid, self.uid)
        return pid, uid, error_bytes("forbidden", "this daemon serves uid %d only" % self.uid)

    def close(self):
        """After serve(): close the Unix socket's listener and the loop's own descriptors."""
        self.unix.listener.close()
        self.workers.stop()
