"""POST /v1/files stages a caller's file on a remote context's daemon under the name the client gives: any
name (`..`, a slash, a NUL) stays a file inside its own 0700 folder, and GET /v1/files/ID returns it once."""
import json
import os
import tempfile

import pytest

from torchsh.daemon import http
from torchsh.daemon.app import App
from torchsh.daemon.routes import dispatch


@pytest.fixture(scope="module")
def app():
    a = App(tempfile.mktemp(suffix=".sock"), None)
    yield a
    a.staging.close()


def request(app, raw):
    req, _ = http.parse_request(bytearray(raw), 1 << 30)
    return dispatch(app, req)


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
