"""The client's half of the caller's files on a remote context (remote/staging.py has the daemon's half).

A path in a command run on a named context is the caller's file. When the daemon asks for files
(protocol.H_UPLOAD) the client POSTs each to /v1/files and repeats the command with TORCHSH_STAGED_i=ID:PATH;
when the reply names files the op wrote (protocol.H_DOWNLOAD) it GETs each into the caller's path, written
beside it, fsync'd and renamed over it (never half a file). Bytes stream in 1 MiB pieces, never whole.
A folder goes file by file into one staged folder (its files and sub-folders only: a link or a special
file inside is refused by name, never followed), and one the op wrote comes back file by file into the
caller's folder (what was there and not rewritten stays).

Builtins only, like the client (client/http.py, client/wire.py, protocol.py).
"""
import posix

from torchsh import protocol, trust
from torchsh.client import http
from torchsh.client.wire import connect, fail

MAX_FOLDER_FILES = 10000  # files and sub-folders of one folder sent: checked before anything is sent


def pairs(header):
    """protocol's id:hex(path),… -> [(id, path bytes)]."""
    out = []
    for item in header.split(","):
        stage_id, _, hexpath = item.partition(":")
        out.append((stage_id, bytes.fromhex(hexpath)))
    return out


def upload(sock, header, env_pairs, op):
    """Send each asked-for file to the daemon on sock; append its TORCHSH_STAGED_i pair to env_pairs."""
    for mark, path in pairs(header):
        if b"\n" in path:  # the staged-file setting is one line
            fail("remote_path", "%s: a file name with a line break cannot be sent" % op, "rename it")
        try:
            is_dir = posix.stat(path).st_mode & trust.S_IFMT == trust.S_IFDIR  # the path named: followed
        except OSError:
            is_dir = None
        if is_dir is None and mark == protocol.STAGED_MAY_BE_MISSING:  # a folder the op makes (fit --log): empty
            stage_id = _post(sock, b"folder=" + _query_word(_name(path)), b"", op)
        elif is_dir:
            stage_id = _send_folder(sock, path, op)
        else:
            stage_id = _send(sock, path, op, b"name=" + _query_word(_name(path)))
        env_pairs.append(b"TORCHSH_STAGED_%d=%s:%s" % (len(env_pairs), stage_id, path))


def _name(path):
    return path.rstrip(b"/").rsplit(b"/", 1)[-1]


def _send_folder(sock, path, op):
    """Send a folder's sub-folders and files into a new staged folder: its id. Every entry is checked (and
    counted) before the first byte goes."""
    entries = _walk(path, op)
    stage_id = _post(sock, b"folder=" + _query_word(_name(path)), b"", op)
    for rel, is_dir in entries:
        query = b"in=%s&path=%s" % (stage_id, _query_word(rel))
        if is_dir:
            _post(sock, query + b"&folder_part=1", b"", op)
        else:
            _send(sock, path + b"/" + rel, op, query)
    return stage_id


def _walk(root, op):
    """[(relative path, is a folder)] under root, parents first; a link or special file fails naming it."""
    out, todo = [], [b""]
    while todo:
        rel_dir = todo.pop()
        try:
            names = sorted(posix.listdir(root + b"/" + rel_dir if rel_dir else root))
        except OSError as e:
            fail("file_error", "%s: cannot read %s: %s" % (op, _show(root + b"/" + rel_dir), e.strerror), None)
        for name in names:
            rel = rel_dir + b"/" + name if rel_dir else name
            st = posix.lstat(root + b"/" + rel)
            kind = st.st_mode & trust.S_IFMT
            if kind not in (trust.S_IFDIR, trust.S_IFREG):
                fail("remote_path", "%s: %s is %s; a folder streams only its files and sub-folders, never a link "
                     "followed" % (op, _show(root + b"/" + rel), trust.KIND_NAMES.get(kind, "a special file")),
                     "copy what it points to into the folder, or name a folder on the context's host: NAME:/path")
            if kind == trust.S_IFREG and st.st_size > protocol.MAX_BODY:
                fail("too_large", "%s: %s is %d bytes, over the %d GiB a file may send"
                     % (op, _show(root + b"/" + rel), st.st_size, protocol.MAX_BODY >> 30),
                     "name it as NAME:/path on the host")
            out.append((rel, kind == trust.S_IFDIR))
            if len(out) > MAX_FOLDER_FILES:
                fail("too_large", "%s: %s holds over %d files and folders" % (op, _show(root), MAX_FOLDER_FILES),
                     "put it on the context's host and write NAME:/absolute/path")
            if kind == trust.S_IFDIR:
                todo.append(rel)  # listed after it: a sub-folder is sent before what is in it
    return out


def _show(path):
    return path.decode(errors="replace")


def _post(sock, query, body, op):
    """POST /v1/files?QUERY with a small body: the id the daemon answers."""
    conn = connect(sock)
    try:
        reply, answer = http.request(conn, b"POST", b"/v1/files?" + query, body)
    finally:
        conn.close()
    if reply.status != 200:
        raise SystemExit(http.error_exit(op, answer))
    return answer.strip()


def _send(sock, path, op, query):
    try:
        fd = posix.open(path, posix.O_RDONLY)
    except OSError as e:
        fail("file_error", "%s: cannot read %s: %s" % (op, path.decode(errors="replace"), e.strerror),
             "the path is on this machine (a file on the context's host is NAME:/path)")
    try:
        st = posix.fstat(fd)
        if st.st_mode & trust.S_IFMT != trust.S_IFREG:
            fail("remote_path", "%s: %s is not a regular file or a folder" % (op, path.decode(errors="replace")),
                 "for one on the context's host write NAME:/absolute/path")
        conn = connect(sock)
        try:
            http.send(conn, b"POST", b"/v1/files?" + query, length=st.st_size, close=True,
                      headers=b"Content-Type: application/octet-stream\r\n")
            left = st.st_size
            while left > 0:
                chunk = posix.read(fd, min(http.PIECE, left))
                if not chunk:
                    fail("file_error", "%s: %s shrank while it was sent" % (op, path.decode(errors="replace")), None)
                conn.sendall(chunk)
                left -= len(chunk)
            reply = http.Reply(conn)
            answer = reply.body()
        finally:
            conn.close()
    finally:
        posix.close(fd)
    if reply.status != 200:
        raise SystemExit(http.error_exit(op, answer))
    return answer.strip()


def _query_word(name):
    """A file name as a query value: unreserved bytes as they are, the rest %XX."""
    return b"".join(bytes([c]) if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c in b"._-")
                    else b"%%%02X" % c for c in name)


def download(sock, header, op):
    """Fetch each file (and folder) the op wrote into the caller's path (atomically, file by file)."""
    for stage_id, path in pairs(header):
        if stage_id.startswith(protocol.STAGED_FOLDER):
            _fetch_folder(sock, stage_id[1:], path, op)
        else:
            _fetch(sock, stage_id, path, op)


def _fetch_folder(sock, stage_id, path, op):
    """The folder's list of (file id, relative path) first (an empty id: a sub-folder), then each file."""
    _make_folder(path, op)
    conn = connect(sock)
    try:
        reply, listing = http.request(conn, b"GET", b"/v1/files/" + stage_id.encode())
    finally:
        conn.close()
    if reply.status != 200:
        raise SystemExit(http.error_exit(op, listing))
    for file_id, rel in pairs(listing.decode()) if listing else ():
        parts = rel.split(b"/")
        if not rel or rel.startswith(b"/") or b"\0" in rel or any(p in (b"", b".", b"..") for p in parts):
            fail("remote_path", "%s: the daemon named %r inside %s; refused" % (op, rel[:200], _show(path)),
                 "the context's daemon is not the one you trust: check it")
        if file_id:
            _fetch(sock, file_id, path + b"/" + rel, op)
        else:
            _make_folder(path + b"/" + rel, op)


def _make_folder(path, op):
    try:
        posix.mkdir(path, 0o777)  # the caller's umask applies, as to any folder a command makes
    except FileExistsError:
        if posix.stat(path).st_mode & trust.S_IFMT != trust.S_IFDIR:
            fail("file_error", "%s: %s is not a folder" % (op, _show(path)), "remove it or name another folder")
    except OSError as e:
        fail("file_error", "%s: cannot make %s: %s" % (op, _show(path), e.strerror), None)


def _fetch(sock, stage_id, path, op):
    conn = connect(sock)
    try:
        http.send(conn, b"GET", b"/v1/files/" + stage_id.encode(), close=True)
        reply = http.Reply(conn)
        if reply.status != 200:
            raise SystemExit(http.error_exit(op, reply.body()))
        _write_file(reply, path, op)
    finally:
        conn.close()


def _keep_mode(fd, path):
    """A file this replaces keeps its mode, as under `>`; a new one keeps open's 0666 less the umask."""
    try:
        st = posix.lstat(path)
    except OSError:
        return
    if st.st_mode & trust.S_IFMT == trust.S_IFREG:
        posix.fchmod(fd, st.st_mode & 0o777)


def _write_file(reply, path, op):
    """The reply's body into path: beside it first, fsync'd, then renamed over it (never half a file)."""
    tmp = path + b".torchsh-part"
    try:
        fd = posix.open(tmp, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | posix.O_NOFOLLOW, 0o666)
    except OSError as e:
        fail("file_error", "%s: cannot write %s: %s" % (op, path.decode(errors="replace"), e.strerror), None)
    try:
        try:
            for piece in reply.pieces():
                _write_all(fd, piece)
        except ConnectionError:
            fail("daemon_unavailable", "%s: %s was cut off" % (op, path.decode(errors="replace")), "nothing was written")
        _keep_mode(fd, path)
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
