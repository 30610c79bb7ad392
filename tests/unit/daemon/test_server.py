"""daemon/server.py in-process: the event loop's limits, with a stub dispatch and short timeouts.

No PyTorch work here: the stub (tests/support/served.py) answers /quick at once and /slow after a sleep, so
what is pinned is the loop itself (timeouts, the connection limit, the two pools, stopping, the socket watch,
the tensor thread's safe points, freeing what a request made for a client that left). How it reads heads and
bodies: test_server_bodies.py.
"""
import json
import os
import socket
import threading
import time

import pytest

from support.served import connect, read_reply, request, served  # noqa: F401  (served is a fixture)
from support.waiting import wait_until


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
