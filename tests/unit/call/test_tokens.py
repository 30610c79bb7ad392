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
