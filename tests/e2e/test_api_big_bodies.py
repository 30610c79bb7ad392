"""A big JSON body on POST /v1/ops/{op} is decoded off the tensor thread, in pieces that give the GIL back
(api/bigbody.py): other shells' ops are answered while it decodes, its own answer is PyTorch's, and a body
whose decoding would not fit the memory budget is refused before it is decoded."""
import json
import threading

import pytest
import torch

from support.apicall import UnixHTTPConnection, post

NUMBERS = 5_000_000  # "0.5," each: 20 MB, decoded in 2-4 s on 2 cores (json.loads alone: ~1.5 s)


@pytest.mark.slow
def test_other_shells_ops_are_answered_while_a_big_body_decodes(sh):
    a = sh("torch ones '[3]'")
    body = b'{"tensors": [[' + b"0.5," * (NUMBERS - 1) + b'0.5], 1]}'
    order, sent, reply = [], threading.Event(), {}

    def big():
        conn = UnixHTTPConnection(sh.socket)
        conn.request("POST", "/v1/ops/add", body=body)  # returns once the last byte is sent
        sent.set()
        answer = conn.getresponse()
        reply.update(status=answer.status, body=json.loads(answer.read()))
        order.append("big")
        conn.close()
    thread = threading.Thread(target=big)
    thread.start()
    assert sent.wait(120)
    # the body is in the daemon (what the socket still buffers is read in one turn of its loop) and decoding
    small = sh("for i in 1 2 3 4 5; do h=$(torch add %s 1); done; torch value $h" % a)
    order.append("small")
    thread.join(120)
    assert small == json.dumps((torch.ones(3) + 1).tolist(), separators=(",", ":"))
    assert order == ["small", "big"], "the small ops waited for the big body: %s" % order
    assert reply["status"] == 200, reply
    made = sh.fetch(reply["body"]["result"])
    assert torch.equal(made, torch.full((NUMBERS,), 0.5) + 1)
    sh("torch free %s" % reply["body"]["result"])


def test_a_big_body_refused_as_not_json_says_where(sh):
    status, answer = post_raw(sh, "add", b'{"tensors": [[' + b"1," * 100_000 + b'1,, 2]]}')
    assert status == 400 and answer["error"]["code"] == "bad_request"
    assert "body is not JSON: Expecting value" in answer["error"]["message"]
    status, answer = post_raw(sh, "add", b"[" + b"1," * 100_000 + b"1]")
    assert status == 400 and answer["error"]["message"] == "body must be a JSON object"


def test_a_big_body_answers_what_a_small_one_does(sh):
    data = torch.randn(40, 500).round(decimals=4)
    status, answer = post(sh, "mul", {"tensors": [data.tolist()], "args": [2]})
    assert status == 200, answer
    assert torch.equal(sh.fetch(answer["result"]), torch.tensor(data.tolist()) * 2)
    status, answer = post(sh, "sum", {"tensors": [[True, False] * 40_000]})  # booleans: an int64 sum, as PyTorch's
    assert status == 200 and sh("torch value %s" % answer["result"]) == "40000"


@pytest.mark.slow
def test_a_body_whose_decoding_would_not_fit_the_budget_is_refused_before_it_is_decoded(fresh_sh):
    s = fresh_sh(start=False)
    s("TORCHSH_MAX_MEMORY=1G torch daemon start")
    body = b'{"tensors": [[' + b"0," * 20_000_000 + b'0]]}'  # 40 MB; decoded: 20M numbers, ~900 MB at its peak
    status, answer = post_raw(s, "sum", body)
    assert status == 507 and answer["error"]["code"] == "out_of_memory", answer
    assert "the decoded JSON body" in answer["error"]["message"]
    assert s("torch value $(torch add $(torch ones '[2]') 1)") == "[2.0,2.0]"  # the daemon goes on


def post_raw(sh, op, body):
    conn = UnixHTTPConnection(sh.socket)
    try:
        conn.request("POST", "/v1/ops/" + op, body=body)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()
