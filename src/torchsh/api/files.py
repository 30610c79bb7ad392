"""POST /v1/files and GET /v1/files/{id}: the caller's files to and from a remote context's daemon
(remote/staging.py keeps them; the client streams them: src/torchsh/filerelay.py)."""
import os
import shutil

from torchsh.daemon.http import Response
from torchsh.errors import TorchshError


def post_file(app, request, params):
    """POST /v1/files?name=BASENAME: hold the body as a staged file; the reply is its id."""
    try:
        stage_id, path = app.staging.new(request.query.get("name") or "file")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            _write_all(fd, request.body)
        finally:
            os.close(fd)
    except OSError as e:  # the daemon host's disk is full, its temp folder unwritable
        raise TorchshError("file_error", "cannot stage the file on the daemon's host: %s" % e.strerror,
                           "free space in its temp folder (TMPDIR)") from None
    return Response(200, stage_id.encode(), "text/plain")


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def get_file(app, request, params):
    """GET /v1/files/{id}: a staged output, once (then it is removed)."""
    path = app.staging.path_of(params["id"])
    if path is None:
        raise TorchshError("unknown_handle", "no staged file %s (fetched already, or never made)" % params["id"][:40])
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:  # what the op wrote there is not a file (or went): say so, never internal_error
        raise TorchshError("file_error", "cannot read staged file %s: %s" % (params["id"][:40], e.strerror)) from None
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return Response(200, data, "application/octet-stream")
