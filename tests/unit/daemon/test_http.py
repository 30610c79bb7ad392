"""daemon/http.py: pure framing, no sockets."""
import pytest

from torchsh.daemon.http import HTTPError, Response, parse_request


def test_partial_request_waits_for_more_bytes():
    assert parse_request(b"POST /v1/cli HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", 100) is None


def test_two_pipelined_requests_parse_one_at_a_time():
    buf = b"GET /v1/status HTTP/1.1\r\n\r\nPOST /v1/cli HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
    req, used = parse_request(buf, 100)
    assert req.method == "GET" and req.path == "/v1/status" and req.keep_alive
    req2, used2 = parse_request(buf[used:], 100)
    assert req2.body == b"hi" and used + used2 == len(buf)


def test_query_strings_parse():
    req, _ = parse_request(b"GET /v1/tensors/x?format=json HTTP/1.1\r\n\r\n", 10)
    assert req.path == "/v1/tensors/x" and req.query == {"format": "json"}


def test_connection_close_and_http10_end_keep_alive():
    req, _ = parse_request(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 10)
    assert not req.keep_alive
    req, _ = parse_request(b"GET / HTTP/1.0\r\n\r\n", 10)
    assert not req.keep_alive


@pytest.mark.parametrize("raw", [b"garbage\r\n\r\n", b"GET / SPDY/3\r\n\r\n", b"GET / HTTP/1.1\r\nbad\r\n\r\n",
                                 b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                                 b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"])
def test_malformed_requests_raise_http_error(raw):
    with pytest.raises(HTTPError):
        parse_request(raw, 100)


def test_oversized_body_is_refused():
    with pytest.raises(HTTPError):
        parse_request(b"POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n", 100)


def test_response_bytes_carry_length_and_close():
    raw = Response(200, b"{}", headers={"X-A": "1"}).to_bytes(keep_alive=False)
    head, body = raw.split(b"\r\n\r\n")
    assert body == b"{}" and b"Content-Length: 2" in head and b"Connection: close" in head and b"X-A: 1" in head
