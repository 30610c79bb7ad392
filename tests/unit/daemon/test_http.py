"""wire/http.py: pure framing, no sockets."""
import pytest

from torchsh.wire.http import MAX_HEAD, HTTPError, Response, parse_request


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


@pytest.mark.parametrize("value", [b"+5", b"\x0b5", b"5,5", b"-1", b"0x5", b"5_0", b"5 5", b""])
def test_content_length_that_is_not_plain_digits_is_refused(value):
    with pytest.raises(HTTPError) as e:
        parse_request(b"POST / HTTP/1.1\r\nContent-Length: " + value + b"\r\n\r\nhello", 100)
    assert e.value.code == "bad_request"


def test_content_length_with_spaces_around_it_is_optional_whitespace():
    req, _ = parse_request(b"POST / HTTP/1.1\r\nContent-Length: \t5 \r\n\r\nhello", 100)
    assert req.body == b"hello"


@pytest.mark.parametrize("second", [b"5", b"6"])
def test_content_length_given_twice_is_refused_even_when_equal(second):
    with pytest.raises(HTTPError):
        parse_request(b"POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: " + second + b"\r\n\r\nhello!", 100)


def test_a_thousand_digit_content_length_is_too_large_not_a_crash():
    with pytest.raises(HTTPError) as e:
        parse_request(b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 1000 + b"\r\n\r\n", 100)
    assert e.value.code == "too_large"


def _head(size):
    start = b"GET / HTTP/1.1\r\nX-Pad: "
    return start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"


def test_head_of_exactly_max_head_bytes_is_accepted():
    assert len(_head(MAX_HEAD)) == MAX_HEAD
    req, used = parse_request(_head(MAX_HEAD), 100)
    assert used == MAX_HEAD and req.headers["x-pad"].startswith("a")


def test_head_one_byte_over_max_head_is_too_large_whole_or_in_pieces():
    with pytest.raises(HTTPError) as e:
        parse_request(_head(MAX_HEAD + 1), 100)
    assert e.value.code == "too_large"
    assert parse_request(_head(MAX_HEAD + 1)[:MAX_HEAD - 1], 100) is None  # could still end in time
    with pytest.raises(HTTPError):
        parse_request(_head(MAX_HEAD + 1)[:MAX_HEAD], 100)  # cannot end within the limit any more


def test_oversized_body_is_too_large():
    with pytest.raises(HTTPError) as e:
        parse_request(b"POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n", 100)
    assert e.value.code == "too_large"


def test_405_names_the_allowed_methods():
    from torchsh.wire.http import Request
    from torchsh.daemon.routes import dispatch
    response = dispatch(None, Request("PUT", "/v1/tensors", {}))
    assert response.status == 405 and response.headers["Allow"] == "GET, POST"
