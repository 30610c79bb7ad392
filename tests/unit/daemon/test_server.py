"""daemon/server.py in-process: the event loop's limits, with a stub dispatch and short timeouts.

No PyTorch work here: the stub answers /quick at once and /slow after a sleep, so what is pinned is
the loop itself (timeouts, the connection limit, the two pools, stopping, the socket watch).
"""
import json
import os
import shutil
import socket
import tempfile
import threading
import time

import pytest

from torchsh import privatesocket, protocol
from support.waiting import wait_until
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


def test_a_request_is_answered_while_hundreds_of_idle_connections_are_open(served):
    served.unix.slots = 1024
    idle = [connect(served) for _ in range(500)]
    t0 = time.monotonic()
    assert b" 200 " in request(served, "/slow?s=0")
    assert time.monotonic() - t0 < 2.0
    for s in idle:
        s.close()


def test_slow_drip_is_cut_at_the_request_timeout(served):
    s = connect(served)
    reply, t0 = b"", time.monotonic()
    for byte in b"GET /quick HTTP/1.1\r\nX-Drip: " + b"x" * 100:
        try:
            s.send(bytes([byte]))
            reply = s.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass
        except OSError:
            break
        if reply or time.monotonic() - t0 > 5:
            break
        time.sleep(0.1)
    assert b" 408 " in reply and b"[request_timeout]" in reply, reply
    assert time.monotonic() - t0 < 3


def test_connection_that_never_sends_is_closed_at_the_idle_timeout(served):
    s = connect(served)
    t0 = time.monotonic()
    assert s.recv(10) == b""
    assert 1.0 < time.monotonic() - t0 < 5


def test_connection_over_the_limit_gets_503_overloaded_and_later_ones_are_served(served):
    idle = [connect(served) for _ in range(8)]
    time.sleep(0.3)  # let the loop accept them all
    refused = read_reply(connect(served))
    assert b" 503 " in refused and b"torchsh-exit: 5" in refused.lower() and b"[overloaded]" in refused, refused
    idle.pop().close()
    time.sleep(0.3)
    assert b" 200 " in request(served)
    assert served.stats()["connection_limit"] == 8


@pytest.mark.slow
def test_lockfree_requests_answer_while_the_tensor_queue_is_full(served):
    slow = [connect(served) for _ in range(7)]  # 7 (limit 8): more than could start at once if all were one pool
    for s in slow:
        s.sendall(b"GET /slow?s=2 HTTP/1.1\r\n\r\n")
    time.sleep(0.2)
    t0 = time.monotonic()
    assert b" 200 " in request(served, "/quick")
    assert time.monotonic() - t0 < 1.0
    for s in slow:
        assert b" 200 " in read_reply(s)


def test_stop_answers_requests_in_flight_and_refuses_new_ones(served):
    s = connect(served)
    s.sendall(b"GET /slow?s=1 HTTP/1.1\r\n\r\n")
    time.sleep(0.2)
    served.app.stop_event.set()
    time.sleep(0.3)
    late = read_reply(connect(served))
    assert b" 503 " in late and b"stopping" in late
    assert b" 200 " in read_reply(s)


def test_reply_while_stopping_closes_the_connection(served):
    s = connect(served)
    s.sendall(b"GET /slow?s=0.5 HTTP/1.1\r\n\r\n")
    time.sleep(0.2)
    served.app.stop_event.set()
    reply = read_reply(s)
    assert b" 200 " in reply and b"Connection: close" in reply
    assert s.recv(10) == b""


def test_deleted_socket_file_is_bound_again(served):
    os.unlink(served.app.socket_path)
    # the daemon's watch notices at its next check; a loaded machine may delay it (no timing assumption here)
    assert wait_until(lambda: os.path.exists(served.app.socket_path), timeout=60)
    assert b" 200 " in request(served)


def test_head_of_exactly_max_head_is_served_and_one_byte_more_is_too_large(served):
    def head_of(size):
        start = b"GET /quick HTTP/1.1\r\nX-Pad: "
        return start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"
    s = connect(served)
    s.sendall(head_of(http.MAX_HEAD))
    assert b" 200 " in read_reply(s)
    s = connect(served)
    s.sendall(head_of(http.MAX_HEAD + 1))
    reply = read_reply(s)
    assert b" 413 " in reply and b"too_large" in reply


def test_bad_content_length_gets_400_json_for_the_api(served):
    s = connect(served)
    s.sendall(b"POST /v1/ops/add HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello")
    reply = read_reply(s)
    assert b" 400 " in reply and b'"code":"bad_request"' in reply


def test_a_task_on_the_tensor_thread_answers_queued_requests_at_its_safe_points(served):
    threads, answered, done = [], threading.Event(), threading.Event()
    workers = served.app.tensor_thread

    def task():  # a job's shape: long work, with points where waiting requests may run
        threads.append(threading.current_thread().name)
        deadline = time.monotonic() + 10
        while not workers.waiting() and time.monotonic() < deadline:
            time.sleep(0.01)
        workers.serve_waiting()  # the queued request is answered here, on this thread, mid-task
        answered.wait(10)
        done.set()

    workers.run_task(lambda: 1 / 0)  # a task's failure is logged; the thread goes on
    workers.run_task(task)
    s = connect(served)
    reply = request(served, "/tensor", s)  # queued behind the task, answered at its safe point
    assert not done.is_set()  # while the task still ran
    answered.set()
    assert b" 200 " in reply and threads == ["torchd-tensor-0"]


def _body_head(path, length):
    return b"POST %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (path.encode(), length)


@pytest.mark.parametrize("path, first", [
    ("/v1/tensors", b"\0" * 65536),                           # a 1 GiB .npy upload of zeros
    ("/v1/tensors", b"PK\x03\x04" + b"\0" * 65532),            # a .pt file (a zip) sent as an .npy
    ("/v1/bundle/import", b"\xff" * 8 + b"{}" + b"\0" * 65526),  # a header length past the body
    ("/v1/ops/add", b"\x93NUMPY" + b"\0" * 65530),             # an .npy where JSON belongs
])
def test_a_big_body_that_is_not_what_its_route_takes_is_refused_on_its_first_bytes(served, path, first):
    s = connect(served)
    s.sendall(_body_head(path, 1 << 30) + first)  # the rest never comes: the answer must not wait for it
    head, _, body = read_reply(s).partition(b"\r\n\r\n")
    assert b" 400 " in head.split(b"\r\n")[0] or b" 422 " in head.split(b"\r\n")[0], head
    err = json.loads(body)["error"]
    assert err["code"] in ("bad_request", "file_error") and "the body of POST %s is not " % path in err["message"]
    assert s.recv(65536) == b""  # then the connection closes
    assert b" 200 " in request(served)  # and the daemon serves on


def test_a_big_cli_body_that_is_not_a_cli_request_gets_one_error_line(served):
    s = connect(served)
    s.sendall(_body_head("/v1/cli", 1 << 30) + b"x" * 65536)
    reply = read_reply(s)
    assert b"torchsh-exit: 2" in reply.lower() and reply.endswith(b"[bad_request]\n"), reply[-200:]


def _npy(n_bytes):
    import io
    import numpy as np
    f = io.BytesIO()
    np.save(f, np.arange(n_bytes // 4, dtype=np.float32))
    return f.getvalue()


@pytest.mark.parametrize("path, body", [
    ("/v1/tensors", _npy(3 << 20)),
    ("/v1/ops/add", b"  \n" + json.dumps({"args": list(range(300000))}).encode()),
    ("/v1/cli", protocol.encode_cli_request([b"value", b"-"], b"/", False, [], [b"x" * (2 << 20)])),
    ("/v1/files?name=f", b"anything at all" * (1 << 17)),
])
def test_a_big_body_of_the_right_kind_reaches_its_handler_whole_in_the_buffer_it_arrived_in(served, monkeypatch,
                                                                                         path, body):
    seen = []

    def record(app, request):
        if request.method == "POST":
            seen.append(request.body)
        return http.Response(200, b"{}")
    monkeypatch.setattr(served.workers, "dispatch", record)
    s = connect(served)
    s.sendall(_body_head(path, len(body)) + body[:100000])
    assert b" 200 " in request(served, "/quick")  # another connection is served while the body is half here
    s.sendall(body[100000:])
    assert b" 200 " in read_reply(s)
    assert seen == [body] and isinstance(seen[0], bytearray)  # never copied into bytes on the loop


def test_what_a_request_made_is_freed_when_its_client_left_before_the_reply(served):
    registry = served.app.registry
    kept = json.loads(request(served, "/make").partition(b"\r\n\r\n")[2])["result"]
    s = connect(served)
    s.sendall(b"GET /make?s=0.5 HTTP/1.1\r\n\r\n")
    s.close()  # the client is gone before its reply: nobody will ever learn the two handles
    deadline = time.monotonic() + 10
    while len(registry.items()) > 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(h for h, _ in registry.items()) == sorted(kept)  # the delivered ones stay


def test_what_a_request_made_is_freed_when_its_client_stops_reading_a_big_reply_and_leaves(served):
    registry = served.app.registry
    s = connect(served)
    s.sendall(b"GET /make?pad=%d HTTP/1.1\r\n\r\n" % (8 << 20))  # more than a socket buffer: a sender thread
    assert s.recv(100).startswith(b"HTTP/1.1 200")
    deadline = time.monotonic() + 10
    while len(registry.items()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    s.close()  # half the reply read: the handles in it never arrived
    while registry.items() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert registry.items() == []
