"""The router's answer when a reply cannot be made: a MemoryError while a reply is encoded (the JSON of a big
result, a big stdout) is out_of_memory (507, exit 4), the budget's code, never internal_error."""
import json

import pytest

from support import inprocess
from support.inprocess import request
from torchsh import protocol
from torchsh.cli.run import CliReply
from torchsh.daemon import routes

app = pytest.fixture(scope="module")(inprocess.app)


def no_memory(*args, **kwargs):
    raise MemoryError()


def test_a_memory_error_encoding_a_json_reply_is_out_of_memory(app, monkeypatch):
    from torchsh.api import ops
    monkeypatch.setattr(ops, "result_json", no_memory)
    body = b'{"args": [[2]]}'
    r = request(app, b"POST /v1/ops/ones HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    err = json.loads(r.body)["error"]
    assert r.status == 507 and err["code"] == "out_of_memory" and "out of memory" in err["message"], err


def test_a_memory_error_rendering_a_command_line_reply_is_out_of_memory(app, monkeypatch):
    from torchsh.cli import render
    monkeypatch.setattr(render, "cli_text", no_memory)
    body = protocol.encode_cli_request([b"ones", b"2"], b"/", True, [])
    r = request(app, b"POST /v1/cli HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert r.headers[protocol.H_EXIT] == str(protocol.exit_status("out_of_memory")) == "4"
    assert b"[out_of_memory]" in r.body and b"ones" in r.body, r.body


def test_a_memory_error_encoding_a_big_stdout_is_out_of_memory():
    class TooBig(str):
        def encode(self, *args, **kwargs):
            raise MemoryError()
    r = routes.cli_response(CliReply(stdout=TooBig("[1.0, …]")))
    assert r.status == 200 and r.headers[protocol.H_EXIT] == "4" and b"[out_of_memory]" in r.body, r.body
