"""`torchd --listen tls://…`'s door of the daemon's one server loop (remote/listener.py on wire/doors.py,
reading.py, tlsconn.py), in-process: support/served.py's loop and Unix socket, a stub dispatch, small limits.
Pinned: after the TLS handshake and the token line ("ok"), a connection is served as the Unix socket's
(any route, kept alive, big bodies, the same error shapes), with no peer pid; a wrong token, or HTTP
first, reads "no" and the connection closes; a connection that never sends its line closes at the
handshake deadline, answered nothing; connections without their line cannot keep a token holder out;
past the slots, a token holder is closed unanswered, which its client reports as daemon_unavailable (not
token_refused); what a request holds ends when its connection drops.
"""
import json
import logging
import socket
import threading

import pytest

from support.served import read_reply, served  # noqa: F401  (served is a fixture)
from support.waiting import wait_until
from torchsh.link import tls
from torchsh.remote import listener as remote
from torchsh.wire import http

SLOTS, WAITING = 3, 4


@pytest.fixture
def door(served, monkeypatch):
    """A --listen door on 127.0.0.1 beside support/served.py's Unix socket; its stub answers with the request's path,
    peer pid and body length, and /hold holds `ended` until the connection drops."""
    for name, value in (("SLOTS", SLOTS), ("WAITING", WAITING), ("PER_PEER", WAITING)):
        monkeypatch.setattr(remote, name, value)
    monkeypatch.setattr(tls, "HANDSHAKE_S", 1.0)
    ended = threading.Event()

    def dispatch(app, request):
        if request.path == "/hold":
            request.hold(ended.set)
        return http.Response(200, json.dumps({"path": request.path, "peer_pid": request.peer_pid,
                                              "got": len(request.body)}).encode())
    monkeypatch.setattr(served.workers, "dispatch", dispatch)
    monkeypatch.setattr(served.workers, "lockfree", lambda app, request: True)
    listener = remote.TLSListener("tls://127.0.0.1:0", served.app.socket_path)
    listener.ended, listener.loop = ended, served
    opened = listener.door(served.unix)
    served.doors.open(opened)
    yield listener
    served.doors.close(opened)


def joined(listener):
    """The real client's connection: certificate pinned, token accepted."""
    return tls.connect("tls://127.0.0.1:%d" % listener.port, listener.fingerprint, listener.token.decode())


def handshaken(listener, source="127.0.0.1"):
    """A TLS connection that has sent nothing yet."""
    raw = socket.create_connection(("127.0.0.1", listener.port), timeout=10, source_address=(source, 0))
    return tls.client_context().wrap_socket(raw)


def request(path="/v1/status", method="GET", body=b""):
    return b"%s %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (method.encode(), path.encode(), len(body), body)


def ask(s, path="/v1/status", method="GET", body=b""):
    s.sendall(request(path, method, body))
    return read_reply(s)


def answer(reply):
    return int(reply.split(b" ", 2)[1]), reply.partition(b"\r\n\r\n")[2]


def waiting(listener):
    return next(d for d in listener.loop.stats()["doors"] if d["kind"] == "remote")["waiting"]


def test_after_the_token_line_a_connection_is_served_as_the_unix_sockets_are(door):
    s = joined(door)
    status, body = answer(ask(s))
    assert status == 200 and json.loads(body) == {"path": "/v1/status", "peer_pid": None, "got": 0}
    big = b"x" * (3 << 20)  # a big body: read a slice a turn of the loop
    assert json.loads(answer(ask(s, "/v1/files?name=f", "POST", big))[1])["got"] == len(big)  # kept alive
    s.sendall(b"NOT HTTP\r\n\r\n")  # the Unix socket's refusal: torchsh's JSON error, then closed
    reply = read_reply(s)
    assert answer(reply)[0] == 400 and json.loads(answer(reply)[1])["error"]["code"] == "bad_request"
    assert b"Torchsh-Error: bad_request" in reply


@pytest.mark.parametrize("first", [b"torchsh-tls-1 " + b"0" * 64 + b"\n", request()])
def test_a_wrong_token_or_http_first_reads_no_and_the_connection_closes(door, first, caplog):
    s = handshaken(door)
    with caplog.at_level(logging.WARNING, "torchd"):
        s.sendall(first)
        assert s.recv(100) == tls.TOKEN_NO
        assert s.recv(100) == b""
    assert "wrong token" in caplog.text


@pytest.mark.parametrize("begun", [b"", tls.PREAMBLE + b"0123"])
def test_a_connection_that_never_ends_its_line_closes_at_the_handshake_deadline_answered_nothing(door, begun):
    s = handshaken(door)
    s.sendall(begun)
    assert s.recv(100) == b""  # no HTTP 408: the client was never past the token


def test_connections_without_their_line_cannot_keep_the_token_holder_out(door):
    squatters = [handshaken(door, "127.0.0.2") for _ in range(WAITING)]
    assert wait_until(lambda: waiting(door) == WAITING, timeout=10)
    s = joined(door)  # pushes out the oldest squatter
    assert answer(ask(s))[0] == 200
    assert squatters[0].recv(100) == b""  # closed, told nothing
    assert waiting(door) == WAITING - 1


def test_past_its_slots_a_token_holder_is_closed_unanswered_which_its_client_calls_unavailable(door):
    held = [joined(door) for _ in range(SLOTS)]
    with pytest.raises(tls.TLSRefused) as refused:
        joined(door)
    assert refused.value.code == "daemon_unavailable" and "before answering the token" in str(refused.value)
    assert [answer(ask(h))[0] for h in held] == [200] * SLOTS


def test_what_a_remote_request_holds_ends_when_its_connection_drops(door):
    s = joined(door)
    s.sendall(request("/hold"))
    assert answer(read_reply(s))[0] == 200 and not door.ended.is_set()
    s.close()
    assert wait_until(door.ended.is_set, timeout=10)

