"""Where torchd lives and how it comes and goes: private folder, start lock, probe-before-bind,
stale sockets, the idle TTL.

Races this file settles: two first commands start two torchd processes at once; the start lock
(flock on torchd.lock, held for the daemon's life) lets exactly one bind, the other exits 0 and
both clients connect to the winner. A socket file left by a killed daemon is unlinked only after
a probe finds nobody answering on it.
"""
import errno
import fcntl
import os
import re
import socket
import stat

from torchsh import protocol

_TTL_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class AlreadyServing(Exception):
    """Another torchd holds the start lock or answers on the socket."""


def parse_ttl(text):
    """'30m' -> 1800.0, '2h' -> 7200.0, 'none' -> None (never expire)."""
    text = str(text).strip().lower()
    if text in ("none", "never", "0", "off", "inf"):
        return None
    m = _TTL_RE.match(text)
    if not m:
        raise ValueError("cannot read %r as a duration; use e.g. 90s, 30m, 2h, 1d or none" % text)
    return float(m.group(1)) * _UNITS[m.group(2)]


def format_duration(seconds):
    if seconds is None:
        return "never"
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "%dh%02dm%02ds" % (h, m, s) if h else ("%dm%02ds" % (m, s) if m else "%ds" % s)


def ensure_private_dir(folder):
    """Create the folder 0700, or check an existing one is ours and private."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.stat(folder)
    if st.st_uid != os.getuid():
        raise PermissionError("%s belongs to uid %d, not us; refusing to use it" % (folder, st.st_uid))
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(folder, 0o700)


def take_start_lock(sock_path):
    """Hold torchd.lock for the daemon's life; AlreadyServing if another daemon holds it."""
    fd = os.open(protocol.sibling(sock_path, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
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


def probe(sock_path):
    """True when something answers on the socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(sock_path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def bind_private(sock_path):
    """Probe, replace a stale socket file, bind with mode 0600, listen."""
    if os.path.exists(sock_path):
        if probe(sock_path):
            raise AlreadyServing("a daemon already answers on %s" % sock_path)
        os.unlink(sock_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(sock_path)
    finally:
        os.umask(old)
    os.chmod(sock_path, 0o600)
    listener.listen(128)
    return listener
