"""Where the daemon's socket, log, lock and token file live, and whether a Unix socket can live there.
Builtins only: the client imports it on every command. What is trusted there is trust.py."""
import posix
import sys


# `python -m torchsh…` puts the working directory first on sys.path: a `torch/` or `torchsh/` folder there
# (a PyTorch checkout, or one another user left in /tmp) would be imported in place of the real one, and
# run as the user. -P (3.11+) leaves the working directory out; 3.10 has only -I, which also ignores
# PYTHONPATH and the user's site-packages.
SAFE_PATH = ("-P",) if sys.version_info >= (3, 11) else ("-I",)


def python_m(module, *args):
    """The argv that runs `python -m module args…` with this interpreter, the working directory not on sys.path."""
    return [sys.executable, *SAFE_PATH, "-m", module, *args]


def runtime_dir():
    """The private folder for socket, log and lock: $XDG_RUNTIME_DIR/torchsh, else ${TMPDIR:-/tmp}/torchsh-UID.

    The fallback name is predictable, so another user can take it first: the client and the daemon
    use it only after `untrusted()` finds it ours and private, and refuse loudly otherwise (as tmux does).
    """
    env = posix.environ
    xdg = env.get(b"XDG_RUNTIME_DIR")
    if xdg:
        return xdg.decode() + "/torchsh"
    tmp = (env.get(b"TMPDIR") or b"/tmp").decode().rstrip("/")
    return "%s/torchsh-%d" % (tmp, posix.getuid())


def socket_folder(sock):
    """The folder that holds the socket (and its log, lock and token file)."""
    return sock.rsplit("/", 1)[0] or "/" if "/" in sock else "."


def socket_path(explicit=None):
    if explicit:
        return explicit
    env = posix.environ.get(b"TORCHSH_SOCKET")
    if env:
        return env.decode()
    return runtime_dir() + "/torchd.sock"


# struct sockaddr_un's sun_path: 108 bytes on Linux, 104 on macOS and the BSDs, the path's closing NUL
# included. bind() and connect() refuse a longer path, so it is checked where a path is first used (the
# client, torchd, torch.nu), before a daemon starts or a file beside the socket is made.
SUN_PATH_LINUX, SUN_PATH_BSD = 108, 104
SUN_PATH = SUN_PATH_LINUX if sys.platform.startswith("linux") else SUN_PATH_BSD
SOCKET_PATH_CODE = "too_large"
SOCKET_PATH_HINT = "set TORCHSH_SOCKET (or --socket) to a shorter path, or XDG_RUNTIME_DIR to a shorter folder"


def socket_path_too_long(path):
    """Why no Unix socket can live at `path` (it does not fit sun_path), or None when it fits."""
    size = len(path.encode(errors="surrogateescape"))
    if size < SUN_PATH:
        return None
    return "socket path %s is %d bytes; a Unix socket path holds at most %d (sun_path: %d bytes with its NUL)" % (
        path, size, SUN_PATH - 1, SUN_PATH)


def context_socket(name):
    """The local socket through which context NAME's daemon is reached: its forwarder (ssh or TLS) listens
    there, so the client, the fast bash path and Nushell speak to a remote daemon as to a local one."""
    return runtime_dir() + "/contexts/" + name + ".sock"


def sibling(sock, suffix):
    """The log/lock/token file that belongs to a socket: torchd.sock -> torchd.log."""
    base = sock[:-5] if sock.endswith(".sock") else sock
    return base + suffix


if __name__ == "__main__":  # pragma: no cover - a debugging aid: print the paths in use
    s = socket_path()
    sys.stdout.write("socket %s\nlog %s\n" % (s, sibling(s, ".log")))
