"""A context's fast door: the bash fast path (docs/fast-path.md) for a named context, so `torch …` there costs
what it costs locally plus the link, not a Python process.

Bash cannot open the forwarder's Unix socket, so the door listens on 127.0.0.1 (a free port) and writes
"PORT CLIENT_TOKEN SERVER_TOKEN" to NAME.fast beside the context's socket (0600, atomically, in the private
folder), as torchd does for its own fast path: the shell function and the launcher find and trust it by the
same checks and speak the same protocol. The head must carry the client token within FAST_HEAD_S (else the
connection closes, nothing more read); only POST /v1/cli passes; the 100 Continue that proves the door goes
out only once an upstream connection is at hand (none: it just closes, and the function runs the real client,
which says what is wrong). The request goes on as a plain CLI request (its Torchsh-Replies and Torchsh-Context
kept); the reply comes back framed for bash (link/fastframe.py). An exec reply's connections are held until
bash drops its own (the block's scope ends with it, as for the client); a refusal before any dispatch is
handed over (kind h). Upstream connections are kept warm (Upstream): no TLS handshake or ssh channel per command.

Runs inside a TLS context's forwarder (forwarder.py) and, for an ssh context, as a process of its own beside
OpenSSH's forwarder (`python -m torchsh.client.contexts.fastdoor LOCAL_SOCKET`, started by ensure()).
"""
import hmac
import os
import secrets
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from torchsh import paths, protocol, trust
from torchsh.client import http
from torchsh.client.contexts.private import hold_lock, lock_holder, private_dir, write_private
from torchsh.link import fastframe

FAST_HEAD_S = 5.0            # from accept to the token-bearing head (as torchd's fast path)
REQUEST_S = 30.0             # the body, once the head passed
MAX_HEAD = 64 << 10
MAX_BODY = 64 << 20          # argv and stdin lines only; bulk data goes through the Unix socket
WAITING_LIMIT = 64           # connections that have not shown the token yet; past it a new one is closed
OPEN_LIMIT = 64              # connections that showed it
PASSED_HEADERS = (protocol.H_REPLIES, "torchsh-context")  # what of the caller's head reaches the daemon
IDLE_S = float(os.environ.get("TORCHSH_FORWARDER_IDLE_S") or 3600)  # a door (and its forwarder) unused this long exits


class Upstream:
    """Connections to the context's daemon: a pool of idle ones (whole replies read) and one kept ready, so a
    command rarely waits for a TLS handshake or an ssh channel. `connect()` makes a new one (OSError)."""
    KEEP, IDLE_S = 4, 300.0  # the daemon closes a connection idle for 600 s

    def __init__(self, connect):
        self.connect, self.idle, self.lock = connect, [], threading.Lock()

    def take(self):
        while True:
            with self.lock:
                conn, since = self.idle.pop() if self.idle else (None, 0)
            if conn is None:
                return self.connect()
            if time.monotonic() - since < self.IDLE_S and _quiet(conn):
                return conn
            conn.close()  # the daemon closed it meanwhile (EOF readable) or it is too old to trust

    def give(self, conn):
        with self.lock:
            if len(self.idle) < self.KEEP:
                self.idle.append((conn, time.monotonic()))
                return
        conn.close()

    def warm(self):
        """One connection made ahead, in the background, when none is idle (for the next command)."""
        with self.lock:
            if self.idle:
                return
        threading.Thread(target=self._warm_one, daemon=True).start()

    def _warm_one(self):
        try:
            self.give(self.connect())
        except OSError:
            pass  # the next command connects itself and reports what is wrong


def _quiet(conn):
    """True when an idle connection has nothing to read: a readable one is at its end (the daemon closed it)."""
    pending = getattr(conn, "pending", None)
    return not (pending and pending()) and not select.select([conn], (), (), 0)[0]


def unix_connect(path):
    """The connect() of an ssh context's door: its forwarder's socket, checked as the client checks it
    (folder and socket ours, the peer our uid)."""
    def connect():
        for where, kind in ((paths.socket_folder(path), trust.S_IFDIR), (path, trust.S_IFSOCK)):
            problem = trust.untrusted(where, kind)
            if problem:
                raise PermissionError(problem)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            uid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        except OSError:
            s.close()
            raise
        if uid != os.geteuid():
            s.close()
            raise PermissionError("the server on %s runs as uid %d, not as you" % (path, uid))
        return s
    return connect


class FastDoor:
    """The loopback listener, its token file beside `local` (the context's socket) and its connections."""

    def __init__(self, local, upstream):
        private_dir(paths.socket_folder(local))  # 0700 and ours, or ContextError (untrusted)
        self.upstream, self.path = upstream, paths.sibling(local, ".fast")
        self.client_token = secrets.token_hex(protocol.FAST_TOKEN_LEN // 2).encode()
        self.framer = fastframe.Framer(secrets.token_hex(protocol.FAST_TOKEN_LEN // 2).encode())
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))  # loopback only: no other machine can connect
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.waiting = threading.BoundedSemaphore(WAITING_LIMIT)
        self.open = threading.BoundedSemaphore(OPEN_LIMIT)
        self.last_used = time.monotonic()
        write_private(self.path, b"%d %s %s\n" % (self.port, self.client_token, self.framer.server_token))

    def serve_forever(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            if not self.waiting.acquire(blocking=False):
                conn.close()  # full: the function runs the real client, through the Unix socket
                continue
            self.last_used = time.monotonic()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def close(self):
        """Stop listening; remove the token file while it still names our port (a newer door's is left)."""
        self.listener.close()
        fastframe.remove_token_file(self.path, self.port)

    def _serve(self, conn):
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # the proof, then the reply: no waiting
            head, rest = _read_head(conn)
        except OSError:
            head = None
        finally:
            self.waiting.release()
        headers = _headers(head or b"")
        shown = headers.get("torchsh-token", "").encode()
        if head is None or not hmac.compare_digest(shown, self.client_token) or not self.open.acquire(False):
            return conn.close()  # no token (compared in constant time), or past the limit: nothing more is read
        try:
            self._relay(conn, head, headers, rest)
        except OSError:
            pass  # the caller or the daemon went away: the function says "lost the daemon" or runs the client
        finally:
            self.open.release()
            conn.close()

    def _relay(self, conn, head, headers, rest):
        length = headers.get("content-length", "0")
        if not head.startswith(b"POST %s " % protocol.CLI_PATH.encode()) or not length.isdigit() or int(length) > MAX_BODY:
            return
        length = int(length)
        up = self.upstream.take()  # before the proof: no daemon, no 100 Continue, and nothing was sent
        try:
            if "100-continue" in headers.get("expect", ""):
                conn.sendall(self.framer.continue_reply())
            conn.settimeout(REQUEST_S)
            body = _read_body(conn, rest, length)
            passed = b"".join(b"%s: %s\r\n" % (k.encode(), headers[k].encode()) for k in PASSED_HEADERS if k in headers)
            up.settimeout(None)
            http.send(up, b"POST", protocol.CLI_PATH.encode(), body, headers=passed)
            reply = http.Reply(up)
            data = reply.body()
            kept = reply.headers.get("connection", "").lower() != "close"
            self._answer(conn, reply.headers, data, headers.get(protocol.FAST_STREAM_HEADER) == "1")
            if protocol.H_EXEC in reply.headers:  # held until the caller drops it: the block's scope ends with it
                conn.settimeout(None)
                while conn.recv(4096):
                    pass
                kept = False
        except BaseException:
            up.close()
            raise
        self.last_used = time.monotonic()
        self.upstream.give(up) if kept else up.close()

    def _answer(self, conn, headers, body, streams):
        if protocol.H_EXIT not in headers:  # a refusal before any dispatch (its limits): nothing ran
            headers = {protocol.H_HANDOVER: "1", protocol.H_EXIT: "0", protocol.H_STDOUT: "0"}
            body = b""
        for piece in self.framer.reply(headers, body, streams):
            conn.sendall(piece)


def _read_head(conn):
    """(head, what followed it), or (None, b"") past MAX_HEAD or FAST_HEAD_S from the accept: the deadline is the
    whole head's, not each read's, so a caller dripping a byte at a time cannot keep a waiting place."""
    buf, deadline = b"", time.monotonic() + FAST_HEAD_S
    while b"\r\n\r\n" not in buf:
        left = deadline - time.monotonic()
        if len(buf) > MAX_HEAD or left <= 0:
            return None, b""
        conn.settimeout(left)
        _quickack(conn)
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def _read_body(conn, rest, length):
    parts, left = [rest[:length]], length - len(rest)
    while left > 0:
        _quickack(conn)
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the caller closed the connection mid-request")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _quickack(conn):
    """Acknowledge at once (Linux; not sticky: before every recv). Bash writes a request in pieces and cannot
    turn Nagle off, so each write waits for the previous one's ACK: a delayed ACK would cost 40 ms."""
    if _QUICKACK is not None:
        conn.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


def _headers(head):
    out = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        out[name.strip().lower().decode(errors="replace")] = value.strip().decode(errors="replace")
    return out


# ---- an ssh context's door: its own process beside OpenSSH's forwarder (a TLS forwarder runs one inside)
def lock_file(local):
    """NAME.door: the ssh context door's start lock (flock held for life) and pid."""
    return paths.sibling(local, ".door")


def ensure(local):
    """Start the fast door of the ssh context whose forwarder listens on `local`, unless one runs. Returns at
    once: this command goes through the Unix socket; the next finds NAME.fast."""
    if lock_holder(lock_file(local)) is not None:
        return
    log = paths.sibling(local, ".log")  # the ssh forwarder's log, in the folder it checked
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        subprocess.Popen(paths.python_m("torchsh.client.contexts.fastdoor", local), stdin=subprocess.DEVNULL,
                         stdout=log_fd, stderr=log_fd, start_new_session=True, close_fds=True)
    finally:
        os.close(log_fd)


def stop(local):
    """Stop the door serving `local`'s context, if one runs; wait until it is gone."""
    pid = lock_holder(lock_file(local))
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and lock_holder(lock_file(local)) == pid:
            time.sleep(0.01)
    return pid is not None


def main(local):
    lock_fd = hold_lock(lock_file(local))
    if lock_fd is None:
        return 0  # another door of this context won the race
    door = FastDoor(local, Upstream(unix_connect(local)))
    signal.signal(signal.SIGTERM, lambda *_: (door.close(), os._exit(0)))
    threading.Thread(target=door.serve_forever, daemon=True).start()
    folder = paths.socket_folder(local)
    while time.monotonic() - door.last_used < IDLE_S and os.path.isdir(folder):  # (a context removed with it)
        time.sleep(min(1.0, IDLE_S))
    door.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
