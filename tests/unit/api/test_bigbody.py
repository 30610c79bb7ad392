"""api/bigbody.py decodes a big JSON body in pieces, so that the GIL changes hands between them: the value is
the one call/tokens.loads makes, whatever the body holds (strings that hide brackets and commas, nested
arrays and objects, NaN); no call of the C scanner reads much more than a piece; and a big word of numbers
becomes the tensor torch.tensor(the list) makes, dtype and bits, without walking the list on the tensor thread."""
import json
import math
import random

import pytest
import torch

from torchsh.api import bigbody
from torchsh.call import tokens
from torchsh.errors import TorchshError
from torchsh.table.values import NumberList, tensor_from_json

PIECE = 200  # small pieces: every way of cutting a run is taken many times in a small body


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(bigbody, "PIECE", PIECE)
    monkeypatch.setattr(bigbody, "SLICE_NUMBERS", 64)


def _same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if type(a) is not type(b) and not (isinstance(a, list) and isinstance(b, list)):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


SCALARS = [0, 1, -2, 3.5, 1e300, -0.0, float("nan"), float("inf"), True, False, None, 2 ** 63, "a]b,c", 'q"[{}',
           "NaN", "tensor://abc00001", ""]


def _random_value(rng, depth=0):
    """Scalars, short arrays and objects nested a few levels, and long runs of numbers among them."""
    r = rng.random()
    if depth > 3 or r < 0.5:
        return rng.choice(SCALARS)
    if r < 0.6:
        return [rng.choice((1, 2.5, True, "NaN")) for _ in range(rng.randint(0, 300))]
    if r < 0.9:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    return {"k%d" % i: _random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": "), (" ,\n\t", " : ")])
def test_the_value_is_what_tokens_loads_makes(small_pieces, separators):
    rng = random.Random(35)
    for _ in range(300):
        text = json.dumps({"tensors": [_random_value(rng)], "args": _random_value(rng)}, separators=separators)
        assert _same(bigbody.decode(text.encode())[0], tokens.loads(text.encode())), text[:300]


@pytest.mark.parametrize("shape", [(5000,), (300, 7), (2000, 2), (6, 30, 40), (4, 3, 8, 8), (1, 3000), (0,)])
def test_arrays_of_every_shape_decode_to_their_lists(small_pieces, shape):
    data = torch.randn(shape).round(decimals=3).tolist()
    text = json.dumps({"tensors": [data, 1], "args": [[1, 2], {"a": data}]}).encode()
    assert _same(bigbody.decode(text)[0], json.loads(text))


@pytest.mark.parametrize("text", [b"[1,2", b"[1,,2]", b"[1 2]", b'{"a" 1}', b"[1,]", b"[1] x", b"", b"{,}",
                                  b'{"a":[1,2,3' + b",4" * 500 + b"}", b"[" * 101 + b"]" * 101,
                                  b"[" + b"1," * 300 + b"[" * 100 + b"]" * 100 + b"]"])
def test_what_is_not_json_is_refused_as_tokens_loads_refuses_it(small_pieces, text):
    with pytest.raises(ValueError):
        tokens.loads(text)
    with pytest.raises(ValueError):
        bigbody.decode(text)


@pytest.mark.parametrize("item", [b"1", b"[1, 2]", b'"a"'])
def test_a_comma_before_an_arrays_end_is_refused_wherever_the_pieces_fall(small_pieces, item):
    for count in range(1, 400, 7):
        text = b'{"tensors": [' + b", ".join([item] * count) + b",]}"
        with pytest.raises(ValueError):
            bigbody.decode(text)


def test_no_call_of_the_c_scanner_reads_more_than_a_few_pieces(small_pieces, monkeypatch):
    """The GIL is held for a call: a body of millions of numbers read in one (json.loads) held every thread."""
    reads, scan = [], bigbody._SCAN

    def recorded(s, at):
        value, end = scan(s, at)
        reads.append(end - at)
        return value, end
    monkeypatch.setattr(bigbody, "_SCAN", recorded)
    for shape in [(20000,), (2000, 10), (5000, 2), (4, 50, 50), (2, 3, 20, 20)]:
        body = json.dumps({"tensors": [torch.rand(shape).tolist(), "x"], "args": [[1, 2]]}).encode()
        reads.clear()
        bigbody.decode(body)
        assert len(body) > 50 * PIECE and max(reads) <= 5 * PIECE, (shape, max(reads))


CASES = [[0.5, 1, 2], [1, 2, 3], [True, False], [True, 2], [True, 0.5], [[1, 2], [3, 4.5]], [[], []],
         [1e300, -1e-300, float("nan"), float("inf")], ["NaN", 1.0, "-Infinity", "inf"], [2 ** 62, 0.5],
         [[[1]], [[2]]], [-(2 ** 63), 2 ** 63 - 1]]


@pytest.mark.parametrize("items", CASES)
def test_a_number_word_is_the_tensor_torch_makes_of_its_list(small_pieces, items):
    words = NumberList(items, bigbody.numbers_array(items), json.dumps(items))
    assert words.array is not None
    made, oracle = tensor_from_json(words, words.text), torch.tensor(tokens_nonfinite(items))
    assert made.dtype == oracle.dtype and made.shape == oracle.shape
    assert torch.equal(made.nan_to_num(), oracle.nan_to_num()) and torch.equal(made.isnan(), oracle.isnan())


def tokens_nonfinite(items):
    from torchsh.table.values import nonfinite_strings
    return nonfinite_strings(items)


@pytest.mark.parametrize("items", [[[1, 2], [3]], [1, [2]], [2 ** 63], [1, "x"], [1, None], [{"a": 1}]])
def test_a_word_that_makes_no_tensor_keeps_the_lists_own_error(small_pieces, items):
    words = NumberList(items, bigbody.numbers_array(items), json.dumps(items))
    assert words.array is None
    with pytest.raises(TorchshError) as made:
        tensor_from_json(words, words.text)
    assert made.value.code == "bad_argument"


def test_the_big_words_become_number_lists_with_their_own_text(small_pieces):
    data = [i * 0.25 for i in range(3000)]
    body = ('{"tensors": [%s, [1, 2]], "args": [%s], "kwargs": {"weight": %s}}' % (
        json.dumps(data), json.dumps(data, separators=(",", ":")), json.dumps(data))).encode()

    class Request:
        pass
    request = Request()
    request.body = body
    bigbody.prepare(None, request)
    prepared = request.prepared
    words = prepared["tensors"] + prepared["args"] + [prepared["kwargs"]["weight"]]
    assert [type(w) for w in words] == [NumberList, list, NumberList, NumberList]
    assert words[2].text == json.dumps(data, separators=(",", ":")) and words[0].text == json.dumps(data)
    assert all(torch.equal(tensor_from_json(w, w.text), torch.tensor(data)) for w in words if type(w) is NumberList)
    assert request.body == b""


def test_a_body_whose_decoding_would_not_fit_is_refused_before_it_is_decoded():
    class Budget:
        def admit_bytes(self, size, what):
            raise TorchshError("out_of_memory", "%s of %d bytes would exceed the memory budget" % (what, size))

    class App:
        memory = Budget()

    class Request:
        body = b'{"tensors": [[' + b"0," * 1000 + b"0]]}"
        prepared = None
    with pytest.raises(TorchshError) as refused:
        bigbody.prepare(App(), Request)
    assert refused.value.code == "out_of_memory" and Request.prepared is None
    assert bigbody.peak_bytes(Request.body) >= 1000 * 40
