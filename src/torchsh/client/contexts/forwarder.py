"""A TLS context's forwarder: a small local process that listens on paths.context_socket(NAME) and relays
each connection over TLS to the context's daemon (tls.connect: pinned fingerprint, then the token), so the
client and Nushell talk to a remote daemon as to a local one; its fast door (fastdoor.py, a thread here) lets
the bash fast path do the same, over warm TLS connections shared with the relay (fastdoor.Upstream).

Started detached on demand by ensure() (contexts.ensure_forwarder), one per context: a start lock
(NAME.lock, flock held for life) lets one of two racing starts serve; the other exits 0. Its socket's
folder is 0700, the socket 0600, and each peer's uid is checked (SO_PEERCRED) as the daemon does. It exits
after IDLE_S without a connection; the next command starts it again. When the daemon cannot be reached, or
refuses the certificate pin or the token, the forwarder answers the request itself with one error
(CLI-shaped for /v1/cli, JSON otherwise), so the client prints one line with its own code.

Run by ensure(): python -m torchsh.client.contexts.forwarder NAME LOCAL_SOCKET, the context's record (JSON) on stdin.
"""
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
from torchsh.client.contexts import fastdoor
from torchsh.client.contexts.private import ContextError, hold_lock, lock_holder, private_dir

IDLE_S = fastdoor.IDLE_S
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
    pid = lock_holder(beside(local)[0])
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and lock_holder(beside(local)[0]) == pid:
        time.sleep(0.01)
    return True


# ---- the forwarder process
def main(name, local):
    record = json.loads(sys.stdin.buffer.read())  # ensure() sends the context's record; stdin is then closed
    os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
    if hold_lock(beside(local)[0]) is None:
        return 0  # another forwarder of this context won the race
    upstream = fastdoor.Upstream(lambda: _connect(record))
    door = fastdoor.FastDoor(local, upstream)  # the bash fast path's way in (NAME.fast), there once the socket is
    signal.signal(signal.SIGTERM, lambda *_: (door.close(), os._exit(0)))
    try:
        listener = bind_private(local)  # a socket left by a forwarder that was killed is replaced
    except BaseException:
        door.close()
        raise
    try:
        threading.Thread(target=door.serve_forever, daemon=True).start()
        upstream.warm()
        _log("forwarding %s (and 127.0.0.1:%d) to %s" % (local, door.port, record["host"]))
        listener.settimeout(IDLE_S)
        _accept_until_idle(listener, door, record, upstream)
    finally:
        door.close()
        try:
            os.unlink(local)  # we hold the lock: no other forwarder can have bound it meanwhile
        except OSError:
            pass
    return 0


def _accept_until_idle(listener, door, record, upstream):
    while True:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            if time.monotonic() - door.last_used < IDLE_S:
                continue  # the fast door was used meanwhile
            _log("idle for %.0fs: exiting" % IDLE_S)
            return
        threading.Thread(target=_serve, args=(conn, record, upstream), daemon=True).start()


class _Refused(ConnectionError):
    """tls.TLSRefused as an OSError, for the fast door (which closes and lets the real client say why)."""

    def __init__(self, refused):
        super().__init__(refused.message)
        self.refused = refused


def _connect(record):
    try:
        return tls.connect(record["host"], record.get("fingerprint") or "", record.get("token") or "")
    except tls.TLSRefused as e:
        raise _Refused(e) from None


def _serve(conn, record, upstream):
    conn.settimeout(None)
    pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.geteuid():
        _log("refused a connection from uid %d (pid %d)" % (uid, pid))
        return _answer(conn, "forbidden", "this forwarder serves uid %d only" % os.geteuid(), None, record)
    try:
        remote = upstream.take()  # a warm connection when one is at hand: no handshake for this command
    except _Refused as e:
        _log("%s: %s" % (e.refused.code, e.refused.message))
        return _answer(conn, e.refused.code, e.refused.message, e.refused.hint, record)
    except OSError as e:
        return _answer(conn, "daemon_unavailable", "cannot reach the daemon at %s: %s" % (record["host"], e), None,
                       record)
    relay.pump(conn, remote)
    upstream.warm()  # one ready for the next command


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
