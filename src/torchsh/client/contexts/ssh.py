"""An ssh context's forwarder: one persistent OpenSSH process that offers the remote daemon's Unix socket
as a local one (`ssh -L LOCAL_SOCK:REMOTE_SOCK`), so every command reaches the remote daemon through
one ssh connection, exactly as it reaches a local daemon (docs/remote.md); beside it, a small process of
ours (fastdoor.py) is the bash fast path's way in, relaying to that socket over warm connections.

ensure_forwarder(ctx, local_sock) is called when nothing answers on local_sock: under a lock beside the
socket it makes sure the remote daemon runs (one `ssh HOST TORCH daemon start`, idempotent, which also
tells us the remote socket), then starts the forwarder detached unless a live one answers already, and
returns once a request through local_sock gets the remote daemon's reply. The forwarder ends by itself
within a second of the remote daemon's end, so "nothing answers" is all a client needs to notice.
stop_forwarder(local_sock) ends it (`context rm`). Beside the socket, in its private folder: NAME.pid (the
forwarder's pid), NAME.log (its ssh's stderr) and NAME.lock. Errors are TorchshError (client side: print
.line(), exit by its code). The one-shot logins (the remote daemon's start) are ssh_login.py.
"""
import fcntl
import os
import shlex
import signal
import subprocess
import time

from torchsh import paths, trust
from torchsh.client import http, wire
from torchsh.errors import TorchshError
from torchsh.client.contexts import fastdoor, ssh_login

FORWARD_TIMEOUT_S = 30.0        # from starting the forwarder to the remote daemon's first reply through it
PROBE_TIMEOUT_S = 10.0          # one request through the forwarder
STOP_TIMEOUT_S = 5.0


def ensure_forwarder(ctx, local_sock):
    """Return once local_sock reaches ctx's remote daemon, starting that daemon and the forwarder as needed,
    and the bash fast path's door to it (fastdoor.py) unless it runs."""
    _ensure_forwarder(ctx, local_sock)
    fastdoor.ensure(local_sock)


def _ensure_forwarder(ctx, local_sock):
    if _answers(local_sock):
        return
    _private_folder(paths.socket_folder(local_sock))
    with _locked(paths.sibling(local_sock, ".lock")):
        if _answers(local_sock):  # another command started it while we waited for the lock
            return
        remote_sock = ssh_login.start_remote_daemon(ctx)
        if _forwarder_pid(local_sock) is not None and _answers(local_sock):
            return  # the forwarder was fine; the remote daemon had stopped (its TTL) and runs again
        stop_forwarder(local_sock)  # a dead or wedged one: its stale socket and pid file go too
        _start_forwarder(ctx, local_sock, remote_sock)


def stop_forwarder(local_sock):
    """Stop the context's forwarder (and its fast door), if one runs, and remove its socket and pid file. True
    when one ran."""
    fastdoor.stop(local_sock)
    pid = _forwarder_pid(local_sock)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # it ended meanwhile
    for path, kind in ((local_sock, trust.S_IFSOCK), (paths.sibling(local_sock, ".pid"), trust.S_IFREG)):
        try:
            if trust.untrusted(path, kind) is None:  # never unlink what is not ours
                os.unlink(path)
        except FileNotFoundError:
            pass
    return pid is not None


def _start_forwarder(ctx, local_sock, remote_sock):
    ssh_login.forwardable(local_sock, "the local socket")
    argv = ssh_login.ssh_argv(ctx) + [
        "-T", "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes",
        "-o", "StreamLocalBindMask=0177",  # the socket is 0600 from its first moment
        "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3",  # a dead link ends it (restarted on demand)
        "-o", "ControlMaster=no", "-o", "ControlPath=none",  # its own connection: its death is the forward's
        "-o", "LogLevel=INFO",  # a refused channel ("open failed") is said at INFO: we read it from the log
        "-L", "%s:%s" % (local_sock, remote_sock), "--", ssh_login.destination(ctx),
        _while_the_daemon_runs(remote_sock)]
    log = paths.sibling(local_sock, ".log")
    log_fd = _open_private(log, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(log_fd, ("%s ssh forwarder: %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), shlex.join(argv))).encode())
        since = os.fstat(log_fd).st_size  # what this forwarder's ssh says starts here
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, start_new_session=True)
    except FileNotFoundError:
        raise ssh_login.no_ssh_client() from None
    finally:
        os.close(log_fd)
    pid_fd = _open_private(paths.sibling(local_sock, ".pid"), os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(pid_fd, b"%d\n" % p.pid)
    finally:
        os.close(pid_fd)
    try:
        _wait_until_answering(ctx, p, local_sock, remote_sock, (log, since))
    except TorchshError:
        stop_forwarder(local_sock)
        raise


def _while_the_daemon_runs(remote_sock):
    """The forwarder's remote command, instead of -N: it ends when the remote daemon's socket goes (its
    idle TTL, `daemon stop`), and with it the forwarder, so the next command finds nothing answering
    and starts both again (a forward to a daemon that is gone would accept, then drop every command)."""
    wait = 'while [ -S "$0" ]; do sleep 1; done'
    return "exec sh -c %s %s" % (shlex.quote(wait), shlex.quote(remote_sock))


def _wait_until_answering(ctx, p, local_sock, remote_sock, log_since):
    """Until a request through the new forwarder is answered; fails fast on what its ssh says."""
    log = log_since[0]
    deadline = time.monotonic() + FORWARD_TIMEOUT_S
    while time.monotonic() < deadline:
        if _answers(local_sock):
            return
        said = _log_tail(*log_since)
        if p.poll() is not None:
            raise TorchshError("daemon_unavailable", "the ssh forwarder to %s exited: %s" % (ctx["host"], said),
                               "see %s" % log)
        if "open failed" in said:  # sshd refused the channel; the daemon answered ssh a moment ago, so mostly
            # its sshd_config forbids it (ssh hears the same words when the socket is gone, so the hint says both)
            raise TorchshError("remote_unavailable", "the ssh server of %s does not forward to the daemon's socket %s "
                               "(%s)" % (ssh_login.hostname(ctx), remote_sock, said),
                               "its sshd_config must allow it (AllowStreamLocalForwarding yes, no DisableForwarding), "
                               "and the daemon must still run there")
        time.sleep(0.05)
    raise TorchshError("daemon_unavailable", "the ssh forwarder to %s did not reach the remote daemon within %ds: %s"
                       % (ctx["host"], FORWARD_TIMEOUT_S, _log_tail(*log_since)), "see %s" % log)


def _answers(local_sock):
    """Does a request through local_sock get a reply? Refuses (untrusted) a socket or folder not ours.
    A reply, not a connect: ssh may accept a local connection and only then learn that the remote socket has
    nobody behind it, so a connect alone proves nothing through a forwarder."""
    for path, kind in ((paths.socket_folder(local_sock), trust.S_IFDIR), (local_sock, trust.S_IFSOCK)):
        try:
            problem = trust.untrusted(path, kind)
        except FileNotFoundError:
            return False
        if problem:
            raise TorchshError("untrusted", problem, trust.UNTRUSTED_HINT)
    try:
        conn = wire.connect(local_sock)
    except OSError:
        return False
    try:
        conn.settimeout(PROBE_TIMEOUT_S)
        http.send(conn, b"GET", b"/v1/status")
        http.Reply(conn)
        return True
    except OSError:
        return False
    finally:
        conn.close()


def _forwarder_pid(local_sock):
    """The pid in NAME.pid when that process lives and is this socket's ssh forwarder, else None."""
    try:
        with open(paths.sibling(local_sock, ".pid"), "rb") as f:
            pid = int(f.read(32).strip() or b"0")
    except (OSError, ValueError):
        return None
    if pid <= 0 or not _alive(pid):
        return None
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:  # a pid reused by another program is not ours
            argv = f.read().split(b"\0")
    except OSError:
        return pid if not os.path.isdir("/proc/self") else None  # no /proc (macOS): the live pid must do
    forwards = b"-L" in argv and any(a.startswith(local_sock.encode() + b":") for a in argv)
    return pid if forwards else None


def _alive(pid):
    """A live process; a zombie (a forwarder this very process started and nobody reaped yet) is not."""
    try:
        os.kill(pid, 0)
    except OSError:  # gone, or (EPERM) the pid is another user's process now
        return False
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return not os.path.isdir("/proc/self")  # no /proc: kill(0) is all there is


def _private_folder(folder):
    """Create the forwarder's folder 0700 (and missing parents), or refuse one that is not ours and private."""
    parts = folder.split("/")
    for i in range(2, len(parts) + 1):
        try:
            os.mkdir("/".join(parts[:i]), 0o700)
        except FileExistsError:
            pass
        except OSError as e:
            raise TorchshError("daemon_unavailable", "cannot create %s: %s" % (folder, e.strerror),
                               "check permissions") from None
    problem = trust.untrusted(folder, trust.S_IFDIR)
    if problem:
        raise TorchshError("untrusted", problem, trust.UNTRUSTED_HINT)


def _open_private(path, flags):
    """A 0600 file of ours in the checked folder; a planted symlink, FIFO or another's file is refused."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except OSError as e:
        raise TorchshError("untrusted", "cannot open %s: %s" % (path, e.strerror), trust.UNTRUSTED_HINT) from None
    problem = trust.untrusted(path, trust.S_IFREG, os.fstat(fd))
    if problem:
        os.close(fd)
        raise TorchshError("untrusted", problem, trust.UNTRUSTED_HINT)
    return fd


class _locked:
    """An exclusive flock on NAME.lock: two first commands start one forwarder, not two."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.fd = _open_private(self.path, os.O_RDWR)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        os.close(self.fd)  # closing releases the lock


def _log_tail(log, since):
    """The last line written to the log after offset `since` (this forwarder's ssh), or a placeholder."""
    try:
        with open(log, "rb") as f:
            f.seek(since)
            said = f.read()[-4096:]
    except OSError:
        return "(no log)"
    return ssh_login.last_line(said) if said.strip() else "(ssh said nothing)"


