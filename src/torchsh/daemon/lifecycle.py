"""Where torchd lives and how it comes and goes: private folder, start lock, the idle TTL, the log (the socket's
bind, probe-before-bind and stale sockets: privatesocket.py).

Races this file settles: two first commands start two torchd processes at once; the start lock
(flock on torchd.lock, held for the daemon's life) lets exactly one bind, the other exits 0 and
both clients connect to the winner. A socket file left by a killed daemon is unlinked only after
a probe finds nobody answering on it (privatesocket.bind_private).

Trust (docs/security.md): the folder must be ours and writable by nobody else, and is never
chmod'ed; the lock and the log are opened O_NOFOLLOW and checked with fstat, so nothing another
user planted is followed or used (Untrusted: torchd logs why and exits 1). The log rotates by size.
"""
import errno
import fcntl
import logging
import os
import re
import stat
import sys

from torchsh import paths, trust
from torchsh.privatesocket import AlreadyServing, Untrusted, refuse_if

_TTL_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_ttl(text):
    """'30m' -> 1800.0, '2h' -> 7200.0, 'none' -> None (never expire)."""
    text = str(text).strip().lower()
    if text in ("none", "never", "0", "off", "inf"):
        return None
    m = _TTL_RE.match(text)
    if not m:
        raise ValueError("cannot read %r as a duration; use e.g. 90s, 30m, 2h, 1d or none" % text)
    return float(m.group(1)) * _UNITS[m.group(2)]


def ensure_private_dir(folder):
    """Create the folder 0700, or check that an existing one is ours and nobody else can write in it.

    Never chmod: a folder we did not create may be $HOME or /tmp (TORCHSH_SOCKET=/tmp/torchd.sock),
    and tightening it would break its owner's setup; a folder that is not private is refused instead,
    with the reason (Untrusted), which torchd logs before exiting 1. lstat: a symlink is refused too.
    """
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:  # missing parents (TORCHSH_SOCKET=~/a/b/torchd.sock): made private too
        os.makedirs(folder, mode=0o700, exist_ok=True)
    refuse_if(trust.untrusted(folder, trust.S_IFDIR))


def open_private(path, flags):
    """Open a file of ours in the private folder: never through a symlink, never another's file."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)  # O_NONBLOCK: no FIFO hang
    try:
        refuse_if(trust.untrusted(path, trust.S_IFREG, os.fstat(fd)))
    except Untrusted:
        os.close(fd)
        raise
    return fd


def take_start_lock(sock_path):
    """Hold torchd.lock for the daemon's life; AlreadyServing if another daemon holds it."""
    path = paths.sibling(sock_path, ".lock")
    try:
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Untrusted("%s is a symlink; %s" % (path, trust.UNTRUSTED_HINT)) from None
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EAGAIN, errno.EACCES):
            raise AlreadyServing("another torchd holds the start lock") from None
        raise
    os.ftruncate(fd, 0)
    os.write(fd, b"%d\n" % os.getpid())
    return fd


LOG_MAX_BYTES = 10 << 20  # torchd.log -> torchd.log.1 past this size; $TORCHSH_LOG_MAX_BYTES overrides


class RotatingLog(logging.StreamHandler):
    """The daemon's log handler: writes to stderr and rotates torchd.log by size.

    The client opens torchd.log (O_NOFOLLOW, in the private folder) as the auto-started daemon's
    stdout and stderr, so tracebacks and warnings land there too. Past max_bytes, torchd.log is
    renamed torchd.log.1 (replacing the previous one; rename never follows a symlink) and a fresh
    torchd.log, created O_EXCL|O_NOFOLLOW, is dup2'ed onto those fds: one old generation is kept.
    A daemon whose stderr is not that file (started by hand in a terminal) never rotates anything.
    """

    def __init__(self, path, max_bytes=LOG_MAX_BYTES, stream=None, fds=(1, 2)):
        super().__init__(stream or sys.stderr)
        self.path, self.max_bytes, self.fds = path, max_bytes, fds
        self.active = writes_to(path, fds[-1])

    def emit(self, record):
        super().emit(record)
        if self.active and os.fstat(self.fds[-1]).st_size > self.max_bytes:
            self.rotate()

    def rotate(self):
        self.flush()
        try:
            if not writes_to(self.path, self.fds[-1]):  # removed or replaced by hand: leave it to its owner
                self.active = False
                return
            os.replace(self.path, self.path + ".1")
            fd = open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND)
        except (OSError, Untrusted) as e:
            self.active = False  # keep writing to the old file; say why once
            self.stream.write("torchd: log rotation stopped: %s\n" % e)
            return
        for target in self.fds:
            os.dup2(fd, target)
        os.close(fd)


def writes_to(path, fd):
    """True when fd is the regular file at path (not through a symlink)."""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(b.st_mode) and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def log_tail(path, lines, max_bytes=4 << 20):
    """The last `lines` lines of the log (at most max_bytes of it), read without following a symlink."""
    fd = open_private(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - max_bytes)
        chunks, have, end = [], 0, size
        while end > start and have <= lines:  # read backwards until enough newlines
            step = min(1 << 16, end - start)
            end -= step
            chunk = os.pread(fd, step, end)
            chunks.append(chunk)
            have += chunk.count(b"\n")
        text = b"".join(reversed(chunks))
    finally:
        os.close(fd)
    if lines <= 0:
        return b""
    kept = text.split(b"\n")
    if kept and kept[-1] == b"":
        kept.pop()
    return b"".join(line + b"\n" for line in kept[-lines:])
