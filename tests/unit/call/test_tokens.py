"""call/tokens.py: each command-line word is classified once, before any op is chosen."""
import math

import pytest

from torchsh.call.tokens import from_json, from_word


@pytest.mark.parametrize("word,cls,value", [
    ("tensor://abc00001", "handle", "tensor://abc00001"), ("2", "int", 2), ("-3", "int", -3),
    ("0.5", "float", 0.5), ("1e-3", "float", 1e-3), ("true", "bool", True), ("None", "null", None),
    ("[2,3]", "list", [2, 3]), ("float64", "str", "float64"), ("[1:3, ::2]", "str", "[1:3, ::2]"),
])
def test_words_are_classified(word, cls, value):
    tok = from_word(word)
    assert (tok.cls, tok.value) == (cls, value)


def test_nonfinite_words_are_floats():
    assert math.isnan(from_word("nan").value) and from_word("-inf").value == -math.inf
    assert from_json("Infinity").value == math.inf


def test_json_values_keep_their_types():
    assert from_json(True).cls == "bool" and from_json(1).cls == "int" and from_json("nn://abc00001").cls == "handle"


@pytest.mark.parametrize("body", [
    b'{"tensors":["tensor://abc00001"]}', b'{"a": 1} \r\n', b'{"a": NaN, "b": -Infinity}', b'{"a":"\xc3\xa9"}',
    b'{"a":1} x', b'{"a":', b'{', b'{}{}', b'{"a":"\xff"}', b'[1, 2]', b' {"a": 1}', b'"text"',
    '{"a": 1}'.encode("utf-16"), b'\xef\xbb\xbf{"a": 1}',
])
def test_a_body_reads_as_pythons_json_reads_it_or_fails_with_its_message(body):
    """loads() reads a body that begins with `{` through json's scanner alone; what it returns, or the
    error it raises, is json.loads' own."""
    import json

    from torchsh.call.tokens import loads

    def outcome(read):
        try:
            return "value", read(body)
        except ValueError as e:
            return type(e).__name__, str(e)
    got, want = outcome(loads), outcome(json.loads)
    assert got[0] == want[0] and (got[1] == want[1] or math.isnan(got[1]["a"]) and math.isnan(want[1]["a"]))
