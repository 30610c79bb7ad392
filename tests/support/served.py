"""daemon/server.py's loop in-process for the unit tests of it and of its doors (test_server*.py, test_doors.py,
test_remote_door.py): `served`, a Server on a private Unix socket with a FakeApp, a stub dispatch and short
timeouts; `connect`, `request` and `read_reply`, a client of it in raw bytes."""
import json
import os
import shutil
import socket
import tempfile
import threading
import time

import pytest

from torchsh import privatesocket
from torchsh.daemon import server as srv
from torchsh.jobs.running import RunningJobs
from torchsh.registry.made import RecordingRegistry
from torchsh.wire import http


class FakeApp:
    def __init__(self, path):
        self.socket_path = path
        self.stop_event = threading.Event()
        self.fastpath = None
        self.request_state = threading.local()
        self.io_stats = None
        self.registry = RecordingRegistry()
        self.jobs = RunningJobs()

    def expired(self):
        return False

    def touch(self):
        pass

    def request_stop(self, restart=False):
        self.stop_event.set()

    def lock_waiters(self):
        return 0


def _stub_dispatch(app, request):
    if request.path == "/slow":
        time.sleep(float(request.query.get("s", "1")))
    if request.path == "/make":  # an op that makes two objects, then takes a while to answer
        made = [app.registry.put(object(), "tensor") for _ in range(2)]
        time.sleep(float(request.query.get("s", "0")))
        return http.Response(200, json.dumps({"result": made}).encode() + b" " * int(request.query.get("pad", "0")))
    return http.Response(200, b'{"path":"%s"}' % request.path.encode())


@pytest.fixture
def served(monkeypatch):
    monkeypatch.setattr(srv, "REQUEST_S", 1.0)
    monkeypatch.setattr(srv, "IDLE_S", 1.5)
    monkeypatch.setattr(srv, "TICK_S", 0.1)
    monkeypatch.setattr(srv, "GRACE_S", 5.0)
    monkeypatch.setattr(srv, "CONNECTION_LIMIT", 8)
    monkeypatch.setattr(srv, "dispatch", _stub_dispatch)
    monkeypatch.setattr(srv, "lockfree", lambda app, request: request.path == "/quick")
    folder = tempfile.mkdtemp(prefix="tsu-")  # short: AF_UNIX paths are limited to ~107 bytes
    path = os.path.join(folder, "s.sock")
    app = FakeApp(path)
    server = srv.Server(app, privatesocket.bind_private(path))
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        app.stop_event.set()
        thread.join(10)
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


def connect(server):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(server.app.socket_path)  # blocking, as the real client's: a full backlog waits
    s.settimeout(10)
    return s


def request(server, path="/quick", sock=None):
    s = sock or connect(server)
    s.sendall(b"GET %s HTTP/1.1\r\n\r\n" % path.encode())
    return read_reply(s)


def read_reply(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(rest) < n:
        rest += s.recv(65536)
    return head + b"\r\n\r\n" + rest
