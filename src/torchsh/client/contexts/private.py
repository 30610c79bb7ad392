"""Files of ours for the context store and the forwarders: folders 0700 and files 0600 that are checked
(trust.untrusted: ours, not symlinks, nobody else can write them) before they are read or used, the start
locks of the processes that serve a context (forwarder.py, fastdoor.py), and the error these paths report
(printed by the client as one line with its code)."""
import fcntl
import os

from torchsh import trust


class ContextError(Exception):
    """A problem with the store or a record: (code, message, hint), printed by the client as one line."""

    def __init__(self, code, message, hint):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def refuse_if(problem):
    if problem:
        raise ContextError("untrusted", problem, trust.UNTRUSTED_HINT.replace(
            "set XDG_RUNTIME_DIR or TORCHSH_SOCKET", "set XDG_CONFIG_HOME"))


def private_dir(path):
    os.makedirs(path, mode=0o700, exist_ok=True)
    refuse_if(trust.untrusted(path, trust.S_IFDIR))


def read_private(path):
    """The bytes of a file of ours that nobody else can write (O_NOFOLLOW, fstat checked)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        refuse_if(trust.untrusted(path, trust.S_IFREG, os.fstat(fd)))
        return os.read(fd, 1 << 20)
    finally:
        os.close(fd)


def write_private(path, data):
    """Atomic and fsync'd, mode 0600 from the start."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def hold_lock(path):
    """An exclusive flock on the lock file `path` (0600, no symlink), our pid written in it, held until this
    process ends: its fd, or None when another process holds it (it serves already)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, b"%d\n" % os.getpid())
    return fd


def lock_holder(path):
    """The pid in the lock file while a process holds its flock, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return int(os.read(fd, 32).strip() or 0) or None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # nobody holds it: nothing runs
    finally:
        os.close(fd)
