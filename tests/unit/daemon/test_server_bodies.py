"""daemon/server.py in-process: how the loop reads a request's head and body, with a stub dispatch.

What is pinned: a head of exactly MAX_HEAD is served and one byte more is too large; a bad Content-Length
gets a JSON 400; a big body that is not what its route takes is refused on its first bytes, and one that
is reaches its handler whole, in the buffer it arrived in, while other connections are served.
"""
import json

import pytest

from torchsh import protocol
from support.served import connect, read_reply, request, served  # noqa: F401  (served is a fixture)
from torchsh.wire import http


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
