"""The client's side of the daemon's lifecycle: starting torchd when none answers, `daemon stop` and
`daemon restart` (synchronous), and `tensors` and `daemon status`, which never start a daemon.
Imported by client/main.py only on those paths.

Synchronous because a daemon cannot report its own exit: `stop` asks it to stop, then waits until the
process is gone (its socket goes first); `restart` is that stop, then a start with the old daemon's
settings (TTL, memory budget, fast path), and returns once the new daemon answers. Builtins only, like
the client: `posix`, `sys`, and the client's wire (wire.py).
"""
import posix
import sys

from torchsh import paths, protocol, trust
from torchsh.client import wire

START_TIMEOUT_S = 120.0   # import torch takes ~1.5 s, but a loaded CI machine can be much slower
STOP_TIMEOUT_S = protocol.stop_grace_s(posix.environ.get(protocol.STOP_GRACE_ENV.encode())) + 10.0  # grace + margin
WAIT_RUNNING_S = 15.0     # `tensors`, `daemon status|stop`: how long a daemon that holds the lock may take to answer
# Settings a restart carries from the old daemon to the new one (the stop reply's H_SETTINGS header).
_KEPT = (b"TORCHSH_TTL", b"TORCHSH_MAX_MEMORY", b"TORCHSH_FASTPATH", b"TORCHSH_LISTEN", b"TORCHSH_PERSIST")


def connect_without_start(path, args):
    """`tensors` and `daemon status`: a connection to the running daemon; never start one."""
    conn = _connect_if_running(path)
    if conn is not None:
        return conn
    if asks_for_help(args):
        help_without_daemon(args)
    if args[:2] == [b"daemon", b"status"]:
        wire.fail("daemon_unavailable", "no daemon is running on %s" % path,
                     "`torch daemon start` starts one; any other command starts one too")
    # A census never starts a daemon just to report that it holds nothing (docker ps without dockerd).
    posix.write(2, b"torch: tensors: no daemon is running on %s; nothing is held\n" % path.encode())
    wire.write(1, b"[]\n" if b"--json" in args else b"")
    raise SystemExit(0)


def asks_for_help(args):
    """Do these words ask for help and nothing else? `torch`, `torch help [OP]`, `torch OP … -h|--help`
    (before a `--`: `torch scope -- ls --help` runs ls)."""
    words = args[:args.index(b"--")] if b"--" in args else args
    return not args or args[0] == b"help" or any(a in (b"-h", b"--help") for a in words)


def help_without_daemon(args):
    """Help never starts a daemon: with none running, it is rendered in a process of its own from the op
    table (cli/offline_help.py), which then exits; this process becomes it."""
    posix.execv(sys.executable, paths.python_m("torchsh.cli.offline_help",
                                               *[a.decode(errors="surrogateescape") for a in args]))


def start_daemon(path, env=None):
    """Start torchd detached, logging beside the socket, and wait until it answers.

    Two commands racing here both spawn; torchd's start lock lets exactly one of them serve and
    the other exits 0, so both clients simply wait for the socket. `env`: the daemon's environment
    (default: ours; a restart passes the old daemon's settings, see restart_env).
    """
    log = paths.sibling(path, ".log")
    log_fd = _open_log(_private_folder(paths.socket_folder(path)), log)
    pid = posix.fork()
    if pid == 0:  # child: detach from the terminal and the caller's process group
        try:
            posix.setsid()
            null = posix.open("/dev/null", posix.O_RDONLY)
            posix.dup2(null, 0)
            posix.dup2(log_fd, 1)
            posix.dup2(log_fd, 2)
            posix.execve(sys.executable, paths.python_m("torchsh.daemon", "--socket", path),
                         posix.environ if env is None else env)
        finally:
            posix._exit(127)
    posix.close(log_fd)
    return _wait_for_daemon(path, pid, log)


def _wait_for_daemon(path, pid, log):
    import time  # builtin module, only paid on the rare start path
    deadline = time.monotonic() + START_TIMEOUT_S
    child_alive = True
    while time.monotonic() < deadline:
        try:
            return wire.connect(path)
        except OSError:
            pass
        if child_alive:
            done, status = posix.waitpid(pid, posix.WNOHANG)
            if done:
                child_alive = False
                if posix.waitstatus_to_exitcode(status) != 0:
                    wire.fail("daemon_unavailable", "torchd failed to start", "see its log: %s" % log)
        time.sleep(0.02)
    wire.fail("daemon_unavailable", "torchd did not answer within %ds" % START_TIMEOUT_S, "see its log: %s" % log)


def _private_folder(folder):
    """Create the socket's folder 0700 (and missing parents), or check the one there is ours and private.

    A folder that another user created first (the predictable ${TMPDIR:-/tmp}/torchsh-UID) is refused,
    never used or changed. Returns an fd of the checked folder, so that the log is opened in that very folder.
    """
    parts = folder.split("/")
    try:
        for i in range(2, len(parts) + 1):
            try:
                posix.mkdir("/".join(parts[:i]) or "/", 0o700)
            except FileExistsError:
                pass
        xdg = posix.environ.get(b"XDG_RUNTIME_DIR")
        if xdg and folder == paths.runtime_dir():  # $XDG_RUNTIME_DIR/torchsh: its parent must be ours too
            wire.refuse_if(trust.untrusted(xdg.decode().rstrip("/") or "/", trust.S_IFDIR))
        fd = posix.open(folder, posix.O_RDONLY | posix.O_DIRECTORY | posix.O_NOFOLLOW)
    except OSError as e:
        try:  # say why we cannot use it when that is a trust problem (a symlink, not ours)
            wire.refuse_if(trust.untrusted(folder, trust.S_IFDIR))
        except OSError:
            pass
        wire.fail("daemon_unavailable", "cannot create %s: %s" % (folder, e.strerror), "check permissions")
    wire.refuse_if(trust.untrusted(folder, trust.S_IFDIR, posix.fstat(fd)))
    return fd


def _open_log(folder_fd, log):
    """torchd.log for appending, opened in the checked folder; a symlink or another's file is refused."""
    try:
        fd = posix.open(log.rsplit("/", 1)[-1], posix.O_WRONLY | posix.O_CREAT | posix.O_APPEND | posix.O_NOFOLLOW
                        | posix.O_NONBLOCK, 0o600, dir_fd=folder_fd)  # O_NONBLOCK: a planted FIFO fails, not hangs
    except OSError as e:
        try:
            wire.refuse_if(trust.untrusted(log, trust.S_IFREG))  # a symlink: O_NOFOLLOW said ELOOP
        except OSError:
            pass
        wire.fail("daemon_unavailable", "cannot create %s: %s" % (log, e.strerror), "check permissions")
    finally:
        posix.close(folder_fd)
    problem = trust.untrusted(log, trust.S_IFREG, posix.fstat(fd))
    if problem:
        posix.close(fd)
        wire.refuse_if(problem)
    return fd


def restart_env(settings):
    """Our environment with the old daemon's TORCHSH_TTL, _MAX_MEMORY and _FASTPATH in place of ours;
    nothing else from the reply (never PATH or LD_*)."""
    env = {k: v for k, v in posix.environ.items() if k not in _KEPT}
    for pair in settings:
        k, _, v = pair.partition(b"=")
        if k in _KEPT:
            env[k] = v
    return env


def _connect_if_running(path):
    """For the commands that never start a daemon: a connection, or None when no daemon runs.

    A torchd that holds the start lock without answering yet (starting, or binding its deleted socket
    again) is running: wait for it, while it lives, up to WAIT_RUNNING_S.
    """
    conn = wire.connect_or_none(path)
    pid = None if conn is not None else _lock_holder(path)
    if pid is not None:
        import time
        deadline = time.monotonic() + WAIT_RUNNING_S
        while conn is None and _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
            conn = wire.connect_or_none(path)
    return conn


def _lock_holder(path):
    """The live torchd whose pid is in torchd.lock (written when it took the lock), else None."""
    try:
        fd = posix.open(paths.sibling(path, ".lock"), posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK)
        try:
            pid = int(posix.read(fd, 32).strip() or b"0")
        finally:
            posix.close(fd)
    except (OSError, ValueError):
        return None
    if pid <= 0 or not _alive(pid):
        return None
    try:  # a stale pid that another program reuses is not a daemon
        fd = posix.open("/proc/%d/cmdline" % pid, posix.O_RDONLY)
        try:
            if b"torchsh.daemon" not in posix.read(fd, 4096):
                return None
        finally:
            posix.close(fd)
    except OSError:
        pass  # no /proc (macOS): the live pid must do
    return pid


def stop(path, request, restart):
    """`daemon stop` and `daemon restart`: ask the daemon to stop, wait until it has exited and its
    socket is gone, then (restart) start a new one with the old one's settings and wait until it answers."""
    conn = _connect_if_running(path)
    if conn is None:
        if not restart:
            wire.write(1, b"no torchd is running on %s\n" % path.encode())
            return 0
        conn = start_daemon(path)  # restart with nothing running: a start, as `systemctl restart` does
    else:
        request = dict(request, argv=[b"daemon", b"stop"] + ([b"--restart"] if restart else []))
        _, headers, body = wire.call(conn, request)
        conn.close()
        code = int(headers.get(protocol.H_EXIT, protocol.EXIT_INTERNAL))
        out_len = int(headers.get(protocol.H_STDOUT, len(body)))
        if code != 0 or protocol.H_PID not in headers:  # refused (or an old daemon): say what it said
            wire.write(1, body[:out_len])
            wire.write(2, body[out_len:])
            return code or protocol.EXIT_INTERNAL
        pid = int(headers[protocol.H_PID])
        _wait_until_gone(path, pid)
        if not restart:
            wire.write(1, b"torchd stopped (pid %d)\n" % pid)  # the reply said "stopping"; now it is true
            return 0
        wire.write(1, body[:out_len])
        conn = start_daemon(path, restart_env(headers.get(protocol.H_SETTINGS, "").encode().split()))
    status, headers, body = wire.call(conn, dict(request, argv=[b"daemon", b"start"]))
    out_len = int(headers.get(protocol.H_STDOUT, len(body)))
    wire.write(1, body[:out_len])
    wire.write(2, body[out_len:])
    return int(headers.get(protocol.H_EXIT, protocol.EXIT_INTERNAL))


def _wait_until_gone(path, pid):
    """Until process `pid` has exited; daemon_unavailable past STOP_TIMEOUT_S.

    torchd unlinks its socket before it releases its start lock and exits, so once the process is gone
    its socket is too; a daemon answering on the path by then is a new one (another shell started it).
    """
    import time  # builtin module, only paid on the rare stop path
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.01)
    wire.fail("daemon_unavailable", "torchd (pid %d) has not exited %ds after it was asked to stop" % (pid, STOP_TIMEOUT_S),
          "a long op may still be running; see `torch daemon log`, or kill %d" % pid)


def _alive(pid):
    """Is `pid` a live process? A zombie counts as gone: it holds no memory, socket or lock any more."""
    try:
        posix.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: the pid now belongs to another user's process, so ours is gone
        return False
    try:
        fd = posix.open("/proc/%d/stat" % pid, posix.O_RDONLY)
    except OSError:
        return True  # no /proc (macOS): kill(0) is all we have
    try:
        stat = posix.read(fd, 512)
    finally:
        posix.close(fd)
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] not in (b"Z", b"X")
