"""The client's side of the wire, shared by the `torch` client (client.py) and its lifecycle path
(daemonctl.py): a connection to our own daemon (trust checked first), one POST /v1/cli call, and the
client's two ways out (writing a reply, failing with one line). Builtins only, like the client.

Nothing is sent before the daemon is proven ours (docs/security.md): the socket's folder must be a
real folder of our uid that nobody else can write in, the socket ours, and the process serving it
ours (SO_PEERCRED). Otherwise another local user could plant a server that receives our argv, cwd
and environment and answers with an exec directive. That costs three syscalls per command.
"""
import _socket
import posix
import sys

from torchsh import protocol


# struct ucred {pid_t pid; uid_t uid; gid_t gid;}: three native ints. Linux only (OpenBSD's
# SO_PEERCRED has another layout); elsewhere the socket file's owner, checked before connect, must do.
_PEERCRED = getattr(_socket, "SO_PEERCRED", None) if sys.platform.startswith("linux") else None


def connect(path):
    """A connection to our own daemon. OSError when nobody serves `path`; refuses an impostor."""
    refuse_if(protocol.untrusted(path, protocol.S_IFSOCK))  # FileNotFoundError: no socket yet
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
        fail("untrusted", problem, protocol.UNTRUSTED_HINT)


def connect_or_none(path):
    """A connection to our daemon, or None when none answers (no folder, no socket, nobody listening)."""
    try:
        refuse_if(protocol.untrusted(protocol.socket_folder(path), protocol.S_IFDIR))
        return connect(path)
    except OSError:
        return None


# "Torchsh-Context: NAME\r\n" when the command runs on a named context (client.py sets it): the daemon
# then prints that context's handles as kind://NAME/… and checks the handles it is given (remote/naming.py).
context_header = b""


def call(conn, request):
    body = protocol.encode_cli_request(**request)
    head = b"POST %s HTTP/1.1\r\nHost: torchd\r\n%sContent-Length: %d\r\n\r\n" % (
        protocol.CLI_PATH.encode(), context_header, len(body))
    try:
        conn.sendall(head + body)
        return _read_response(conn)
    except OSError as e:
        fail("daemon_unavailable", "lost the daemon mid-request: %s" % e, "retry; see the daemon log")


def _read_response(conn):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode()
    need = int(headers.get("content-length", 0))
    parts = [rest]
    have = len(rest)
    while have < need:
        chunk = conn.recv(max(65536, need - have))
        if not chunk:
            raise ConnectionError("connection closed")
        parts.append(chunk)
        have += len(chunk)
    return status, headers, b"".join(parts)


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
