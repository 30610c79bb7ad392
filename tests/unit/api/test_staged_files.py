"""POST /v1/files stages a caller's file on a remote context's daemon under the name the client gives: any
name (`..`, a slash, a NUL) stays a file inside its own 0700 folder, and GET /v1/files/ID returns it once."""
import json
import os
import tempfile

import pytest

from support import inprocess
from support.inprocess import request

app = pytest.fixture(scope="module")(inprocess.app)


@pytest.mark.parametrize("name", ["x.npy", "..", ".", "..%2F..%2Fescape", "a%00b", "%2Fetc%2Fpasswd", ""])
def test_a_staged_file_stays_in_its_own_folder_whatever_its_name(app, name):
    body = b"bytes of the caller"
    r = request(app, b"POST /v1/files?name=%s HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (name.encode(), len(body), body))
    assert r.status == 200, r.body
    stage_id = r.body.decode()
    path = app.staging.path_of(stage_id)
    assert os.path.dirname(os.path.dirname(path)) == app.staging.folder and open(path, "rb").read() == body
    assert oct(os.stat(app.staging.folder).st_mode & 0o777) == "0o700"
    got = request(app, b"GET /v1/files/%s HTTP/1.1\r\n\r\n" % stage_id.encode())
    assert got.status == 200 and got.body == body
    again = request(app, b"GET /v1/files/%s HTTP/1.1\r\n\r\n" % stage_id.encode())  # once only
    assert again.status == 404 and json.loads(again.body)["error"]["code"] == "unknown_handle"


def test_a_file_that_would_all_but_fill_the_daemons_disk_is_refused_and_nothing_stays(app, monkeypatch):
    from torchsh.api import files
    disk = os.statvfs(app.staging.folder if app.staging.folder else tempfile.gettempdir())
    monkeypatch.setattr(files, "DISK_RESERVE", disk.f_bavail * disk.f_frsize)  # any byte more is too many
    before = set(os.listdir(app.staging.folder)) if app.staging.folder else set()
    body = b"x" * 4096
    r = request(app, b"POST /v1/files?name=big.npy HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    err = json.loads(r.body)["error"]
    assert r.status != 200 and err["code"] == "file_error" and "free" in err["message"], err
    assert set(os.listdir(app.staging.folder)) == before  # nothing staged, not even its folder


# -- leftovers: what waits on a client that went away is removed after STALE_S -----------------------------
def _upload(app, name, body):
    r = request(app, b"POST /v1/files?name=%s HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (name, len(body), body))
    assert r.status == 200, r.body
    return r.body.decode()


def _remote_command(app, argv, staged=()):
    """argv run as the client runs it on a context named r1: it streams files (it carries upload and download)."""
    from torchsh import protocol
    from torchsh.cli.run import run_cli
    env = {"TORCHSH_CONTEXT": "r1"}
    env.update(("TORCHSH_STAGED_%d" % i, "%s:%s" % pair) for i, pair in enumerate(staged))
    return run_cli(app, {"argv": argv, "cwd": "/caller", "env": env, "stdin_is_tty": True, "stdin": None,
                         "replies": frozenset(protocol.CLIENT_REPLIES)})


def _later(seconds):
    import time
    from torchsh.remote import staging
    return time.monotonic() + staging.STALE_S + seconds


def test_an_upload_no_command_reads_is_removed_once_it_waited_stale_s(app):
    stage_id = _upload(app, b"x.npy", b"bytes")
    app.staging.sweep(_later(-60))
    assert app.staging.path_of(stage_id) is not None  # not yet
    app.staging.sweep(_later(1))
    assert app.staging.path_of(stage_id) is None


def test_an_output_the_client_never_fetched_is_removed_but_a_datasets_file_stays(app):
    import io
    import numpy as np
    buf = io.BytesIO()
    np.save(buf, np.arange(6, dtype=np.float32))
    kept = _upload(app, b"x.npy", buf.getvalue())
    opened = _remote_command(app, ["data", "open", "x.npy"], [(kept, "/caller/x.npy")])
    assert opened.exit == 0, opened.stderr
    t = _remote_command(app, ["arange", "3"]).stdout.strip()
    saved = _remote_command(app, ["save", t, "out.npy"])
    assert saved.exit == 0, saved.stderr
    from torchsh import protocol
    out_id = saved.downloads[0][0]
    assert app.staging.path_of(out_id) is not None
    app.staging.sweep(_later(1))
    assert app.staging.path_of(out_id) is None  # its client never came for it
    assert app.staging.path_of(kept) is not None  # the dataset maps it


def test_a_failed_data_open_keeps_no_staged_copy(app):
    stage_id = _upload(app, b"bad.npy", b"not an npy file")
    r = _remote_command(app, ["data", "open", "bad.npy"], [(stage_id, "/caller/bad.npy")])
    assert r.exit != 0 and ("[file_error]" in r.stderr or "[bad_argument]" in r.stderr), r.stderr
    assert app.staging.path_of(stage_id) is None
