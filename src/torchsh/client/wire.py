"""The client's side of the wire, shared by the `torch` client (main.py) and its lifecycle path
(daemonctl.py): which daemon a command goes to (the local one, or a named context's forwarder socket:
docs/remote.md), a connection to it (trust checked first), one POST /v1/cli call, and the client's two
ways out (writing a reply, failing with one line). Builtins only, like the client.

Nothing is sent before the daemon is proven ours (docs/security.md): the socket's folder must be a
real folder of our uid that nobody else can write in, the socket ours, and the process serving it
ours (SO_PEERCRED). Otherwise another local user could plant a server that receives our argv, cwd
and environment and answers with an exec directive. That costs three syscalls per command.
"""
import _socket
import posix
import sys

from torchsh import paths, protocol, trust
from torchsh.client import http


# struct ucred {pid_t pid; uid_t uid; gid_t gid;}: three native ints. Linux only (OpenBSD's
# SO_PEERCRED has another layout); elsewhere the socket file's owner, checked before connect, must do.
_PEERCRED = getattr(_socket, "SO_PEERCRED", None) if sys.platform.startswith("linux") else None


def connect(path):
    """A connection to our own daemon. OSError when nobody serves `path`; refuses an impostor."""
    refuse_if(trust.untrusted(path, trust.S_IFSOCK))  # FileNotFoundError: no socket yet
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.connect(path)
        uid = None if _PEERCRED is None else int.from_bytes(
            s.getsockopt(_socket.SOL_SOCKET, _PEERCRED, 12)[4:8], sys.byteorder)
    except OSError:
        s.close()
        raise
    if uid is not None and uid != posix.geteuid():  # the folder was swapped between our lstat and connect
        s.close()
        refuse_if("the server on %s runs as uid %d, not as you (uid %d)" % (path, uid, posix.geteuid()))
    return s


def refuse_if(problem):
    if problem:
        fail("untrusted", problem, trust.UNTRUSTED_HINT)


def connect_or_none(path):
    """A connection to our daemon, or None when none answers (no folder, no socket, nobody listening)."""
    try:
        refuse_if(trust.untrusted(paths.socket_folder(path), trust.S_IFDIR))
        return connect(path)
    except OSError:
        return None


# "Torchsh-Context: NAME\r\n" when the command runs on a named context (select() sets it): the daemon
# then prints that context's handles as kind://NAME/… and checks the handles it is given (remote/naming.py).
context_header = b""
# The replies this client carries out (protocol.REPLIES): all of them, but handover (it is the real client).
CARRIES = b"%s: %s\r\n" % (protocol.H_REPLIES.encode(), protocol.replies_header(protocol.CLIENT_REPLIES))


def select(sock, name):
    """(socket path, context name or None for the default daemon) for a command, in docs/remote.md's order:
    --socket, --context, $TORCHSH_CONTEXT, $TORCHSH_SOCKET, the current-context file, the default."""
    global context_header
    if sock is None and name is None:
        name = selected_context()
    if name is None or name == b"default":
        return paths.socket_path(sock), None
    context_header = b"Torchsh-Context: %s\r\n" % checked_name(name)
    return paths.context_socket(name.decode()), name


def checked_socket(path):
    """`path`, when a Unix socket can live there; else one line and exit 2 before anything starts
    (bind and connect would refuse it, and the daemon's start would fail into its log)."""
    too_long = paths.socket_path_too_long(path)
    if too_long:
        fail(paths.SOCKET_PATH_CODE, too_long, paths.SOCKET_PATH_HINT)
    return path


def first_flags(args):
    """`--socket PATH` and `--context NAME` as the first words (either order): (socket, name, rest)."""
    sock = name = None
    while len(args) >= 2 and args[0] in (b"--socket", b"--context"):
        if args[0] == b"--socket":
            sock = args[1].decode()
        else:
            name = args[1]
        args = args[2:]
    return sock, name, args


def selected_context():
    """$TORCHSH_CONTEXT, else none when $TORCHSH_SOCKET names a daemon (as DOCKER_HOST beats docker's
    current context), else the name in the current-context file (`torch context use`), else None."""
    env = posix.environ
    if env.get(b"TORCHSH_CONTEXT"):
        return env[b"TORCHSH_CONTEXT"]
    if env.get(b"TORCHSH_SOCKET"):
        return None
    config = env.get(b"XDG_CONFIG_HOME") or (env.get(b"HOME", b"") + b"/.config")
    path = config.decode(errors="surrogateescape") + "/torchsh/current-context"
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK)
    except OSError:  # none (the common case: one failed open), or a symlink: the default daemon
        return None
    try:
        refuse_if(trust.untrusted(path, trust.S_IFREG, posix.fstat(fd)))
        return posix.read(fd, 256).strip() or None
    finally:
        posix.close(fd)


def checked_name(name):
    """A context name can become a path (contexts/NAME.sock): letters, digits, _ . - only."""
    ok = 0 < len(name) <= 63 and name[:1] not in (b".", b"-") and all(
        48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c in b"_.-" for c in name)
    if not ok:
        fail("unknown_context", "%r is not a context name" % name.decode(errors="replace"),
             "`torch context ls` lists them")
    return name


def call(conn, request):
    """POST one command to /v1/cli on conn: (status, headers, body) of the reply; one line and exit 5 if lost."""
    try:
        http.send(conn, b"POST", protocol.CLI_PATH.encode(), protocol.encode_cli_request(**request),
                  headers=context_header + CARRIES)
        reply = http.Reply(conn)
        return reply.status, reply.headers, reply.body()
    except OSError as e:
        fail("daemon_unavailable", "lost the daemon mid-request: %s" % e, "retry; see the daemon log")


def write(fd, data):
    data = memoryview(data)  # slices share the buffer: a 100 MB reply to a pipe is not copied per write
    try:
        while data:
            data = data[posix.write(fd, data):]
    except BrokenPipeError:
        pass  # `torch value $t | head -1`: the reader left; that is not our failure


def fail(code, message, hint):
    sys.stderr.write("torch: %s; %s [%s]\n" % (message, hint, code))
    sys.exit(protocol.exit_status(code))
