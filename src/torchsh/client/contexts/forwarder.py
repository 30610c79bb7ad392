"""A TLS context's forwarder: a small local process that listens on paths.context_socket(NAME) and relays
each connection over TLS to the context's daemon (tls.connect: pinned fingerprint, then the token), so the
client, the fast bash path's fallback and Nushell talk to a remote daemon as to a local one.

Started detached on demand by ensure() (contexts.ensure_forwarder), one per context: a start lock
(NAME.lock, flock held for life) lets one of two racing starts serve; the other exits 0. Its socket's
folder is 0700, the socket 0600, and each peer's uid is checked (SO_PEERCRED) as the daemon does. It exits
after IDLE_S without a connection; the next command starts it again. When the daemon cannot be reached, or
refuses the certificate pin or the token, the forwarder answers the request itself with one error
(CLI-shaped for /v1/cli, JSON otherwise), so the client prints one line with its own code.

Run by ensure(): python -m torchsh.client.contexts.forwarder NAME LOCAL_SOCKET, the context's record (JSON) on stdin.
"""
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

from torchsh import paths, protocol
from torchsh.privatesocket import AlreadyServing, Untrusted, bind_private, probe
from torchsh.link import relay, tls
from torchsh.client.contexts.private import ContextError, private_dir

IDLE_S = float(os.environ.get("TORCHSH_FORWARDER_IDLE_S") or 3600)
START_TIMEOUT_S = 15.0


def beside(local):
    """(the start lock, the log) beside a forwarder's socket."""
    return paths.sibling(local, ".lock"), paths.sibling(local, ".log")


# ---- the client's side: start it when nothing answers, stop it (`context rm`)
def ensure(record, local):
    """Return once `local` answers, starting the forwarder of context record["name"] when it does not."""
    if probe(local):
        return
    for folder in (paths.runtime_dir(), paths.socket_folder(local)):  # both 0700 and ours, or refused
        private_dir(folder)
    log = beside(local)[1]
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    record_r, record_w = os.pipe()  # the record (token included) reaches it on stdin, never in argv or a file
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.close(record_w)
            os.dup2(record_r, 0)
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.execv(sys.executable, paths.python_m("torchsh.client.contexts.forwarder", record["name"], local))
        finally:
            os._exit(127)
    os.close(log_fd)
    os.close(record_r)
    os.write(record_w, json.dumps(record).encode())  # far less than a pipe's buffer
    os.close(record_w)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if probe(local):
            return
        done, status = os.waitpid(pid, os.WNOHANG)
        if done and os.waitstatus_to_exitcode(status) != 0:
            break
        time.sleep(0.01)
    raise ContextError("daemon_unavailable", "the forwarder of context %s did not start" % record["name"],
                                "see its log: %s" % log)


def stop(local):
    """Stop the forwarder serving `local`, if one runs (its pid is in the lock file); wait until it is gone."""
    pid = _lock_holder(beside(local)[0])
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _lock_holder(beside(local)[0]) == pid:
        time.sleep(0.01)
    return True


def _lock_holder(lock):
    """The pid in the lock file while a process holds its flock, else None."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return int(os.read(fd, 32).strip() or 0) or None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # nobody holds it: no forwarder runs
    finally:
        os.close(fd)


# ---- the forwarder process
def main(name, local):
    record = json.loads(sys.stdin.buffer.read())  # ensure() sends the context's record; stdin is then closed
    os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
    lock, _ = beside(local)
    lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another forwarder of this context won the race
    os.ftruncate(lock_fd, 0)
    os.write(lock_fd, b"%d\n" % os.getpid())
    listener = bind_private(local)  # a socket left by a forwarder that was killed is replaced
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    _log("forwarding %s to %s" % (local, record["host"]))
    listener.settimeout(IDLE_S)
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                _log("idle for %.0fs: exiting" % IDLE_S)
                return 0
            threading.Thread(target=_serve, args=(conn, record), daemon=True).start()
    finally:
        try:
            os.unlink(local)  # we hold the lock: no other forwarder can have bound it meanwhile
        except OSError:
            pass


def _serve(conn, record):
    conn.settimeout(None)
    pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.geteuid():
        _log("refused a connection from uid %d (pid %d)" % (uid, pid))
        return _answer(conn, "forbidden", "this forwarder serves uid %d only" % os.geteuid(), None, record)
    try:
        remote = tls.connect(record["host"], record.get("fingerprint") or "", record.get("token") or "")
    except tls.TLSRefused as e:
        _log("%s: %s" % (e.code, e.message))
        return _answer(conn, e.code, e.message, e.hint, record)
    relay.pump(conn, remote)


def _answer(conn, code, message, hint, record):
    """Answer the client's request ourselves (read its head and body first, so its write never fails)."""
    try:
        conn.settimeout(5.0)
        buf = b""
        while b"\r\n\r\n" not in buf and len(buf) < 65536:
            chunk = conn.recv(65536)
            if not chunk:
                break
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length" and v.strip().isdigit():
                length = int(v.strip())
        left = min(length, 64 << 20) - len(rest)
        while left > 0:
            chunk = conn.recv(min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
        conn.sendall(_error_reply(head.startswith(b"POST " + protocol.CLI_PATH.encode() + b" "),
                                  code, message, hint, record["name"]))
    except OSError:
        pass
    finally:
        conn.close()


def _error_reply(cli, code, message, hint, name):
    op = "context %s" % name
    if cli:
        body = ("torch: %s: %s%s [%s]\n" % (op, message, "; " + hint if hint else "", code)).encode()
        ctype = "text/plain"
    else:
        body = json.dumps({"error": {"code": code, "message": message, "hint": hint, "op": op}}).encode()
        ctype = "application/json"
    head = "HTTP/1.1 %d Error\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s: %d\r\n%s: 0\r\nTorchsh-Error: %s\r\n" \
           "Connection: close\r\n\r\n" % (protocol.http_status(code), ctype, len(body), protocol.H_EXIT,
                                          protocol.exit_status(code), protocol.H_STDOUT, code)
    return head.encode() + body


def _log(line):
    sys.stderr.write("%s forwarder[%d] %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), os.getpid(), line))
    sys.stderr.flush()


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1], sys.argv[2]))
    except AlreadyServing as e:
        _log("%s: exiting" % e)
    except (ValueError, OSError, Untrusted) as e:
        _log("cannot forward: %s" % e)
        sys.exit(1)
