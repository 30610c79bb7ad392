"""`torch serve --port`'s door of the daemon's one server loop (serve/tcp.py on wire/doors.py, reading.py,
tlsconn.py), in-process: a stub dispatch, short deadlines and small limits. Pinned: connections without the
token hold no slot and cannot keep its holder out; one address cannot push out another's; a connection that
never shows the token is closed at the head deadline; a drip is cut at the whole-request deadline (not per
read); past the slots, a 503 with Retry-After and never a reset; the V2 routes only; a Deferred reply and
kept-alive connections as on the Unix socket; TLS beyond loopback, its handshake done in the loop.
"""
import json
import re
import socket
import ssl
import threading

import pytest

from support.served import read_reply, served  # noqa: F401  (served is a fixture)
from support.waiting import wait_until
from torchsh.link import tls
from torchsh.serve import tcp
from torchsh.wire import http

SLOTS, WAITING, PER_PEER = 4, 8, 4


def _stub_dispatch(app, request):
    """/v2/models/M/infer: a Deferred reply, sent from another thread (as a batch's), echoing the body's
    length and padding the reply by ?pad= bytes; anything else: 200 at once."""
    if not request.path.endswith("/infer"):
        return http.Response(200, b'{"path":"%s"}' % request.path.encode())
    pad = b" " * int(request.query.get("pad", "0"))
    body = json.dumps({"got": len(request.body)}, separators=(",", ":")).encode() + pad
    return http.Deferred(lambda send: threading.Timer(0.01, send, (http.Response(200, body),)).start())


@pytest.fixture
def loop(served, monkeypatch):
    """support/served.py's loop (its Unix socket, short ticks), the port's limits small and this module's stub."""
    for name, value in (("SLOTS", SLOTS), ("WAITING", WAITING), ("PER_PEER", PER_PEER), ("HEAD_S", 1.0),
                        ("REQUEST_S", 1.0), ("IDLE_S", 2.0)):
        monkeypatch.setattr(tcp, name, value)
    monkeypatch.setattr(served.workers, "dispatch", _stub_dispatch)
    monkeypatch.setattr(served.workers, "lockfree", lambda app, request: True)
    return served


@pytest.fixture
def port(loop):
    door = tcp.PortDoor(loop.app, "127.0.0.1", 0)  # open in the loop once this returns
    yield door
    door.close()


def connect(door, source="127.0.0.1"):
    return socket.create_connection(("127.0.0.1", door.port), timeout=10, source_address=(source, 0))


def request(door, path="/v2/health/ready", method="GET", body=b"", token=True):
    auth = b"Authorization: %s\r\n" % door.bearer if token else b""
    return b"%s %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s" % (
        method.encode(), path.encode(), auth, len(body), body)


def status_of(reply):
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else None


def v2_error(reply):
    return json.loads(reply.partition(b"\r\n\r\n")[2])


def waiting(loop):
    return next(d for d in loop.stats()["doors"] if d["kind"] == "serve")["waiting"]


def test_the_token_holder_is_served_while_connections_without_it_fill_the_waiting_room(loop, port):
    squatters = [connect(port, "127.0.0.%d" % (2 + i // PER_PEER)) for i in range(WAITING)]  # two addresses
    for s in squatters:
        s.sendall(b"GET /v2 HTTP/1.1\r\nX-Drip: ")  # a head begun, never ended, without the token
    assert wait_until(lambda: waiting(loop) == WAITING, timeout=10)
    for _ in range(2 * WAITING):  # each on a new connection: each pushes out the oldest squatter
        s = connect(port)
        s.sendall(request(port))
        assert status_of(read_reply(s)) == 200
        s.close()
    replies = [read_reply(s) for s in squatters]  # pushed out (503, Retry-After) or cut at the head deadline
    assert {status_of(r) for r in replies} <= {503, 408} and 503 in {status_of(r) for r in replies}
    assert all(b"Retry-After: 1\r\n" in r for r in replies if status_of(r) == 503)
    assert all(s.recv(10) == b"" for s in squatters)  # then the end, never a reset


def test_one_address_cannot_push_out_another_addresses_waiting_connections(loop, monkeypatch):
    monkeypatch.setattr(tcp, "HEAD_S", 30.0)  # all of them wait while the test looks
    door = tcp.PortDoor(loop.app, "127.0.0.1", 0)
    theirs = [connect(door, "127.0.0.2") for _ in range(PER_PEER)]
    assert wait_until(lambda: waiting(loop) == PER_PEER, timeout=10)
    mine = [connect(door) for _ in range(WAITING + 4)]
    assert wait_until(lambda: waiting(loop) == 2 * PER_PEER and _readable(mine[-PER_PEER - 1]), timeout=10)
    assert [_readable(s) for s in mine] == [True] * (WAITING + 4 - PER_PEER) + [False] * PER_PEER
    assert all(status_of(read_reply(s)) == 503 for s in mine[:-PER_PEER])  # mine pushed out my own oldest only
    assert [_readable(s) for s in theirs] == [False] * PER_PEER  # still open, and told nothing
    door.close()


def test_a_connection_that_never_shows_the_token_is_closed_at_the_head_deadline(loop, port):
    silent = connect(port)
    assert silent.recv(10) == b""  # closed (the socket's timeout, 10 s, would raise first otherwise)
    assert waiting(loop) == 0


def test_a_head_without_the_token_gets_403_in_v2_words_and_its_connection_closes(loop, port):
    s = connect(port)
    s.sendall(request(port, "/v2/models/m/infer", "POST", b'{"inputs": []}', token=False))
    reply = read_reply(s)
    assert status_of(reply) == 403 and b"Connection: close" in reply
    assert v2_error(reply)["code"] == "token_refused" and "Authorization: Bearer" in v2_error(reply)["error"]
    assert s.recv(10) == b""


def test_a_drip_is_cut_with_408_at_the_whole_request_deadline_though_each_read_is_quick(loop, port):
    s = connect(port)
    head = request(port, "/v2/models/m/infer", "POST", b"x" * 100)[:-100]
    s.sendall(head)
    reply, sent = b"", 0
    while not reply and sent < 100:  # a byte of the body every 0.1 s: 10 s for all of it
        s.sendall(b"x")
        sent += 1
        wait_until(lambda: _readable(s), timeout=0.1)
        reply = read_reply(s) if _readable(s) else b""
    assert status_of(reply) == 408 and v2_error(reply)["code"] == "request_timeout" and sent < 100


def _readable(s):
    s.setblocking(False)
    try:
        return bool(s.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False
    finally:
        s.settimeout(10)


def test_past_its_slots_every_refused_connection_reads_503_with_retry_after_not_a_reset(loop, monkeypatch):
    monkeypatch.setattr(tcp, "WAITING", 64)  # none pushed out while waiting: the slots are what is pinned
    monkeypatch.setattr(tcp, "PER_PEER", 64)
    port = tcp.PortDoor(loop.app, "127.0.0.1", 0)
    conns = [connect(port) for _ in range(SLOTS + 20)]
    for s in conns:  # a body the refusal leaves unread: closing on it would reset the connection
        s.sendall(request(port, "/v2/models/m/infer", "POST", b"x" * (256 << 10)))
    replies = [read_reply(s) for s in conns]
    assert [status_of(r) for r in replies] == [200] * SLOTS + [503] * 20  # the first SLOTS keep theirs
    assert all(b"Retry-After: 1\r\n" in r and v2_error(r)["code"] == "overloaded" for r in replies[SLOTS:])
    assert all(s.recv(10) == b"" for s in conns[SLOTS:])
    port.close()


def test_only_the_v2_routes_pass_the_port(loop, port):
    s = connect(port)
    s.sendall(request(port, "/v1/status"))
    reply = read_reply(s)
    assert status_of(reply) == 404 and v2_error(reply)["code"] == "not_found"


def test_deferred_replies_on_a_kept_alive_connection_and_pipelined_requests(loop, port):
    s = connect(port)
    for n in (10, 20):  # one after the other: the loop, or a lingering worker, reads the next
        s.sendall(request(port, "/v2/models/m/infer", "POST", b"x" * n))
        assert json.loads(read_reply(s).partition(b"\r\n\r\n")[2]) == {"got": n}
    s.sendall(request(port, "/v2/models/m/infer", "POST", b"x" * 3) + request(port, token=False))
    stream = b""
    while chunk := s.recv(1 << 16):  # the second of two pipelined requests is checked as the first: then closed
        stream += chunk
    assert re.findall(rb"HTTP/1\.1 (\d+) ", stream) == [b"200", b"403"]


def test_a_tls_door_handshakes_in_the_loop_and_carries_big_bodies_and_replies(loop):
    door = tcp.PortDoor(loop.app, "0.0.0.0", 0)  # beyond loopback: TLS with the daemon's certificate
    try:
        pinned = ssl.create_default_context(cafile=tls.material_paths(loop.app.socket_path)[0])
        s = pinned.wrap_socket(connect(door), server_hostname="torchd")
        big = b"x" * (3 << 20)  # a big body: read a slice a turn; the reply, 8 MiB, by a sender thread
        s.sendall(request(door, "/v2/models/m/infer?pad=%d" % (8 << 20), "POST", big))
        reply = read_reply(s)
        assert status_of(reply) == 200 and reply.partition(b"\r\n\r\n")[2].startswith(b'{"got":%d}' % len(big))
        s.sendall(request(door))  # the same connection, kept alive
        assert status_of(read_reply(s)) == 200
        plain = connect(door)
        plain.sendall(request(door))  # no HTTP before a handshake
        assert not _answered(plain)
        assert _answered(connect(door)) is False  # a handshake never begun ends at the head deadline
    finally:
        door.close()


def _answered(s):
    try:
        return s.recv(100).startswith(b"HTTP")
    except ConnectionResetError:
        return False
