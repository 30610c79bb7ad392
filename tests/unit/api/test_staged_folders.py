"""A staged folder on a remote context's daemon (POST /v1/files?folder=, then ?in=ID&path=RELATIVE per file):
a relative path a hostile client sends (`..`, an absolute path, a NUL, an empty part) lands nowhere; GET of
the folder's id lists its files under ids of their own, leaving out those unchanged since they were received."""
import json
import os
import tempfile

import pytest

from torchsh.daemon.app import App
from torchsh.daemon.routes import dispatch
from torchsh.remote import staging
from torchsh.wire import http


@pytest.fixture(scope="module")
def app():
    a = App(tempfile.mktemp(suffix=".sock"), None)
    yield a
    a.staging.close()


def request(app, method, target, body=b""):
    raw = b"%s %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (method, target, len(body), body)
    req, _ = http.parse_request(bytearray(raw), 1 << 30)
    return dispatch(app, req)


def every_file(folder):
    return sorted(os.path.join(top, n) for top, _, names in os.walk(folder) for n in names)


@pytest.mark.parametrize("relative", ["..%2Fesc", "a%2F..%2F..%2Fesc", "%2Fabs", "%2Ftmp%2Fesc", "a%00b", "a%2F%2Fb",
                                      ".", "a%2F.", "", "esc%2F"])
def test_a_hostile_relative_path_is_refused_and_writes_nothing(app, relative):
    folder_id = request(app, b"POST", b"/v1/files?folder=run").body
    before = every_file(app.staging.folder)
    r = request(app, b"POST", b"/v1/files?in=%s&path=%s" % (folder_id, relative.encode()), b"evil")
    assert r.status == 422 and json.loads(r.body)["error"]["code"] == "remote_path", r.body
    assert every_file(app.staging.folder) == before
    assert not os.path.exists(os.path.join(os.path.dirname(app.staging.folder), "esc"))


def test_a_folder_comes_back_as_its_new_and_changed_files(app):
    folder_id = request(app, b"POST", b"/v1/files?folder=run").body
    for rel, body in ((b"a.txt", b"kept"), (b"sub%2Fb.txt", b"old")):
        assert request(app, b"POST", b"/v1/files?in=%s&path=%s" % (folder_id, rel), body).status == 200
    assert request(app, b"POST", b"/v1/files?in=%s&path=empty&folder_part=1" % folder_id).status == 200
    root = app.staging.path_of(folder_id.decode())
    assert open(os.path.join(root, "sub", "b.txt"), "rb").read() == b"old"
    with open(os.path.join(root, "sub", "b.txt.new"), "wb") as f:  # what an op writes: new, and b.txt renamed over
        f.write(b"new!")
    os.replace(os.path.join(root, "sub", "b.txt.new"), os.path.join(root, "sub", "b.txt"))
    with open(os.path.join(root, "c.txt"), "wb") as f:
        f.write(b"c")
    os.symlink("/etc/passwd", os.path.join(root, "link"))  # never sent back
    listing = request(app, b"GET", b"/v1/files/%s" % folder_id)
    assert listing.status == 200
    pairs = [(i, bytes.fromhex(h).decode()) for i, _, h in (p.partition(":") for p in listing.body.decode().split(","))]
    assert sorted(rel for i, rel in pairs if i) == ["c.txt", "sub/b.txt"]  # a.txt unchanged: left out
    assert sorted(rel for i, rel in pairs if not i) == ["empty", "sub"]
    got = {rel: request(app, b"GET", b"/v1/files/%s" % i.encode()).body for i, rel in pairs if i}
    assert got == {"c.txt": b"c", "sub/b.txt": b"new!"}
    assert app.staging.path_of(folder_id.decode()) is None  # the folder went with its list
    app.staging.remove_ids([staging.FOLDER_MARK + folder_id.decode()])  # a failed op's: no error when gone


def test_a_folder_being_sent_waits_from_its_latest_file_and_listed_files_never_fetched_go_in_time(app):
    import time
    folder_id = request(app, b"POST", b"/v1/files?folder=run").body.decode()
    start = time.monotonic()
    app.staging._waiting[os.path.join(app.staging.folder, folder_id)] = start - staging.STALE_S + 5  # an old folder
    assert request(app, b"POST", b"/v1/files?in=%s&path=a.txt" % folder_id.encode(), b"a").status == 200
    app.staging.sweep(start + 60)
    assert app.staging.path_of(folder_id) is not None  # its latest file came just now
    with open(os.path.join(app.staging.path_of(folder_id), "made.txt"), "wb") as f:  # what an op wrote there
        f.write(b"m")
    listing = request(app, b"GET", b"/v1/files/%s" % folder_id.encode()).body.decode()
    file_id = listing.partition(":")[0]
    assert app.staging.path_of(file_id) is not None
    app.staging.sweep(time.monotonic() + staging.STALE_S + 1)  # its client never came for it
    assert app.staging.path_of(file_id) is None
