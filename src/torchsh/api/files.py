"""POST /v1/files and GET /v1/files/{id}: the caller's files and folders to and from a remote context's daemon
(remote/staging.py keeps them; the client streams them: src/torchsh/client/filerelay.py)."""
import os
import shutil

from torchsh import protocol
from torchsh.errors import TorchshError
from torchsh.wire.http import Response


def post_file(app, request, params):
    """POST /v1/files?name=BASENAME: hold the body as a staged file; the reply is its id.
    ?folder=BASENAME (no body): a new empty staged folder; the reply is its id.
    ?in=ID&path=RELATIVE: the body is the file at RELATIVE inside staged folder ID (&folder_part=1: an
    empty sub-folder there instead); the reply is ID. RELATIVE stays inside the folder or is refused."""
    query = request.query
    try:
        if "in" in query:
            return _post_inside(app, query, request.body)
        if "folder" in query:
            stage_id, _ = app.staging.new_folder(query["folder"])
            app.staging.waiting([stage_id])  # for its files, then the command (removed if neither comes)
            return Response(200, stage_id.encode(), "text/plain")
        stage_id, path = app.staging.new(query.get("name") or "file")
        try:
            _write_new(path, request.body)
        except BaseException:
            app.staging.remove([path])  # refused, or half written (a full disk): its folder goes
            raise
        app.staging.waiting([stage_id])  # for the command that reads it (removed if none comes)
    except OSError as e:  # the daemon host's disk is full, its temp folder unwritable
        raise TorchshError("file_error", "cannot stage the file on the daemon's host: %s" % e.strerror,
                           "free space in its temp folder (TMPDIR)") from None
    return Response(200, stage_id.encode(), "text/plain")


def _post_inside(app, query, body):
    stage_id, relative = query["in"], query.get("path", "")
    path = app.staging.inside(stage_id, relative)
    if path is None:
        raise TorchshError("remote_path", "%r is no path inside staged folder %s" % (relative[:200], stage_id[:40]),
                           "a relative path without `..`, `.` or empty parts, inside a folder POST ?folder= made")
    if query.get("folder_part"):
        if not os.path.isdir(path):  # made already for a file sent into it: fine
            os.mkdir(path, 0o700)
    else:
        _write_new(path, body)
        app.staging.received(stage_id, relative, path)
    app.staging.waiting([stage_id])  # a big folder may take long to send: it waits from its latest file
    return Response(200, stage_id.encode(), "text/plain")


DISK_RESERVE = 256 << 20  # a staged file never leaves the daemon host's disk with less than this free


def _write_new(path, data):
    """The caller's bytes as a new file; refused (file_error) when they would all but fill the disk: the
    daemon's own saves and the host's other users need room too."""
    disk = os.statvfs(os.path.dirname(path))
    free = disk.f_bavail * disk.f_frsize
    if len(data) > free - DISK_RESERVE:
        raise TorchshError("file_error", "staging %d bytes would leave the daemon host's temp folder with %d "
                           "MiB free" % (len(data), max(0, free - len(data)) >> 20),
                           "free space there (TMPDIR of the daemon), or name a file on its host: NAME:/path")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def get_file(app, request, params):
    """GET /v1/files/{id}: a staged output, once (then it is removed). A staged folder answers the list of
    its files (protocol.staged_pairs' id:hex(relative path) pairs; an empty id is a sub-folder), each now staged
    under its own id to GET."""
    path = app.staging.path_of(params["id"])
    if path is None:
        raise TorchshError("unknown_handle", "no staged file %s (fetched already, or never made)" % params["id"][:40])
    if os.path.isdir(path):
        try:
            listing = app.staging.unpack(params["id"])
        except OSError as e:
            raise TorchshError("file_error", "cannot list staged folder %s: %s"
                               % (params["id"][:40], e.strerror)) from None
        return Response(200, protocol.staged_pairs(listing or []).encode(), "text/plain")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:  # what the op wrote there is not a file (or went): say so, never internal_error
        raise TorchshError("file_error", "cannot read staged file %s: %s" % (params["id"][:40], e.strerror)) from None
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return Response(200, data, "application/octet-stream")
