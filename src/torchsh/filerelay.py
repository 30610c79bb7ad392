"""The client's half of the caller's files on a remote context (remote/staging.py has the daemon's half).

A path in a command run on a named context is the caller's file. When the daemon asks for files
(protocol.H_UPLOAD) the client POSTs each to /v1/files and repeats the command with TORCHSH_STAGED_i=ID:PATH;
when the reply names files the op wrote (protocol.H_DOWNLOAD) it GETs each into the caller's path, written
beside it, fsync'd and renamed over it (never half a file). Bytes stream in 1 MiB pieces, never whole.

Builtins only (posix, sys) plus torchsh.wire, torchsh.protocol and copyrelay's HTTP reading, like client.py.
"""
import posix

from torchsh import protocol
from torchsh.copyrelay import PIECE, _body, _error_reply, _head
from torchsh.wire import call, connect, fail

MAX_ROUNDS = 64  # one round per file the command names: data open of many files asks file by file


def serve(conn, sock, request, headers, body):
    """Send the files a remote context's daemon asks for, repeat the command on conn, then fetch the files
    it wrote: (headers, body) of the command's last reply."""
    op = request["argv"][0].decode(errors="replace") if request["argv"] else "torch"
    for _ in range(MAX_ROUNDS):
        if protocol.H_UPLOAD not in headers:
            break
        upload(sock, headers[protocol.H_UPLOAD], request["env_pairs"], op)
        _, headers, body = call(conn, request)
    if protocol.H_DOWNLOAD in headers and headers.get(protocol.H_EXIT) == "0":
        download(sock, headers[protocol.H_DOWNLOAD], op)
    return headers, body


def pairs(header):
    """protocol's id:hex(path),… -> [(id, path bytes)]."""
    out = []
    for item in header.split(","):
        stage_id, _, hexpath = item.partition(":")
        out.append((stage_id, bytes.fromhex(hexpath)))
    return out


def upload(sock, header, env_pairs, op):
    """Send each asked-for file to the daemon on sock; append its TORCHSH_STAGED_i pair to env_pairs."""
    for _, path in pairs(header):
        if b"\n" in path:  # the staged-file setting is one line
            fail("remote_path", "%s: a file name with a line break cannot be sent" % op, "rename it")
        stage_id = _send(sock, path, op)
        env_pairs.append(b"TORCHSH_STAGED_%d=%s:%s" % (len(env_pairs), stage_id, path))


def _send(sock, path, op):
    try:
        fd = posix.open(path, posix.O_RDONLY)
    except OSError as e:
        fail("file_error", "%s: cannot read %s: %s" % (op, path.decode(errors="replace"), e.strerror),
             "the path is on this machine (a file on the context's host is NAME:/path)")
    try:
        st = posix.fstat(fd)
        if st.st_mode & protocol.S_IFMT != protocol.S_IFREG:
            fail("remote_path", "%s: %s is not a regular file; a remote daemon reads folders on its own host"
                 % (op, path.decode(errors="replace")), "write NAME:/absolute/path")
        conn = connect(sock)
        name = path.rsplit(b"/", 1)[-1]
        conn.sendall(b"POST /v1/files?name=%s HTTP/1.1\r\nHost: torchd\r\nConnection: close\r\n"
                     b"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n"
                     % (_query_word(name), st.st_size))
        left = st.st_size
        while left > 0:
            chunk = posix.read(fd, min(PIECE, left))
            if not chunk:
                fail("file_error", "%s: %s shrank while it was sent" % (op, path.decode(errors="replace")), None)
            conn.sendall(chunk)
            left -= len(chunk)
        status, length, rest = _head(conn)
        reply = _body(conn, length, rest)
        conn.close()
    finally:
        posix.close(fd)
    if status != 200:
        raise SystemExit(_error_reply(op, reply))
    return reply.strip()


def _query_word(name):
    """A file name as a query value: unreserved bytes as they are, the rest %XX."""
    return b"".join(bytes([c]) if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c in b"._-")
                    else b"%%%02X" % c for c in name)


def download(sock, header, op):
    """Fetch each file the op wrote into the caller's path (atomically)."""
    for stage_id, path in pairs(header):
        conn = connect(sock)
        conn.sendall(b"GET /v1/files/%s HTTP/1.1\r\nHost: torchd\r\nConnection: close\r\n\r\n" % stage_id.encode())
        status, length, rest = _head(conn)
        if status != 200:
            raise SystemExit(_error_reply(op, _body(conn, length, rest)))
        _write_file(conn, path, length, rest, op)
        conn.close()


def _write_file(conn, path, length, rest, op):
    tmp = path + b".torchsh-part"
    try:
        fd = posix.open(tmp, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | posix.O_NOFOLLOW, 0o666)
    except OSError as e:
        fail("file_error", "%s: cannot write %s: %s" % (op, path.decode(errors="replace"), e.strerror), None)
    try:
        _write_all(fd, rest)
        left = length - len(rest)
        while left > 0:
            chunk = conn.recv(min(PIECE, left))
            if not chunk:
                fail("daemon_unavailable", "%s: %s was cut off" % (op, path.decode(errors="replace")),
                     "nothing was written")
            _write_all(fd, chunk)
            left -= len(chunk)
        posix.fsync(fd)
    except BaseException:
        posix.close(fd)
        posix.unlink(tmp)
        raise
    posix.close(fd)
    posix.rename(tmp, path)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[posix.write(fd, view):]
