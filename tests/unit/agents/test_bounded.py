"""Every tool result stays within 8 KB of JSON: a bigger answer is kept as a resource, an error is one JSON row."""
import json

import pytest

from torchsh.agents import bounded
from torchsh.agents.link import Outcome
from torchsh.agents.store import Store


@pytest.fixture
def store(tmp_path):
    return Store(folder=str(tmp_path))


def test_a_small_answer_is_the_result_itself(store):
    result = bounded.text("tensor://e7r00001\n", store)
    assert [b.text for b in result.content] == ["tensor://e7r00001\n"]
    assert not store.items


@pytest.mark.parametrize("body", [
    "[%s]" % ",".join("%.7f" % (i / 7) for i in range(100000)),  # a big value
    '{"k":"\\\\q\\""}\n' * 5000,                                   # quotes and backslashes: escaped twice
    "é☃\u0001\n" * 20000,                                         # non-ASCII and control characters
])
def test_a_big_answer_becomes_a_resource_within_the_bound(store, body):
    result = bounded.text(body, store)
    assert bounded.size(result) <= bounded.LIMIT
    link = next(b for b in result.content if b.type == "resource_link")
    assert store.read("out", int(link.uri.rsplit("/", 1)[1])) == body
    summary = result.content[0].text
    assert summary.startswith("output: %d bytes" % len(body.encode())) and link.uri in summary
    assert body.startswith(summary.split("its head:\n", 1)[1])


def test_an_error_is_one_json_row_within_the_bound():
    result = bounded.error("too_large", "m" * 50000, "h" * 5000, output='"\\' * 40000)
    assert result.is_error and len(result.content) == 1
    row = json.loads(result.content[0].text)
    assert row["code"] == "too_large" and row["message"].startswith("mmm") and row["hint"].startswith("hhh")
    assert row["output"].startswith('"\\') and bounded.size(result) <= bounded.LIMIT


def test_a_failed_command_keeps_its_error_row(store):
    outcome = Outcome(3, "", 0, "torch: add: no such handle [unknown_handle]\n",
                      {"code": "unknown_handle", "message": "no such handle", "hint": "see tensors", "op": "add"})
    row = json.loads(bounded.outcome(outcome, store).content[0].text)
    assert row == {"code": "unknown_handle", "message": "no such handle", "hint": "see tensors"}


def test_an_output_longer_than_the_link_kept_is_refused_too_large(store):
    outcome = Outcome(0, "1.0\n" * 10, 10 << 30, "", None, truncated=True)
    result = bounded.outcome(outcome, store)
    row = json.loads(result.content[0].text)
    assert result.is_error and row["code"] == "too_large" and row["output"].startswith("1.0\n")
    assert not store.items


def test_an_exit_without_an_error_row_is_output(store):
    """`runs diff` exits 1 when the runs differ: that is its answer, not a failure."""
    result = bounded.outcome(Outcome(1, "lr: 0.1 -> 0.2\n", 15, "", None), store)
    assert not result.is_error and result.content[0].text == "lr: 0.1 -> 0.2\n(exit 1)\n"
