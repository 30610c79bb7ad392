"""float32 JSON by orjson: inside numpy's positional range its text is numpy's str, byte for byte, and values
outside it (tiny, huge, zero, subnormal, non-finite), wherever they fall in a tensor of any shape, are spliced
in with numpy's text; tensor_json stays what the obviously right rendering (numpy's str, nested) prints."""
import json

import numpy as np
import orjson
import pytest
import torch

from torchsh.text import float32json, tensortext

ODD = [1e-5, -3e-7, 1e6, -2.5e7, float(np.finfo(np.float32).max), 1e-45, 0.0, -0.0, float("nan"), float("inf"), -float("inf"),
       9.9999e-5, 1e-4]


def numpy_json(x):
    return ("[" + ",".join(x.astype(str).tolist()) + "]").encode()


def slow_json(t, nan):
    """numpy's str of each value, non-finite ones as JSON wants them, nested as json.dumps nests lists."""
    bare = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
    texts = t.reshape(-1).numpy().astype(str).tolist()
    texts = [(bare[s] if nan == "bare" else '"%s"' % bare[s]) if s in bare else s for s in texts]

    def nest(offset, shape):
        if not shape:
            return texts[offset]
        inner = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return "[" + ",".join(nest(offset + i * inner, shape[1:]) for i in range(shape[0])) + "]"
    return nest(0, list(t.shape))


def test_orjson_prints_numpys_str_across_numpys_positional_range():
    """A stride through every float32 from the least >= 1e-4 to the greatest < 1e6 (279M in all; the full
    sweep was run once by hand), every value next to the ends, and the powers of ten between, both signs."""
    low = int(np.array(np.nextafter(np.float32(1e-4), np.float32(1))).view(np.uint32))
    high = int(np.array(np.nextafter(np.float32(1e6), np.float32(0))).view(np.uint32))
    tens = np.array([float("1e%d" % i) for i in range(-4, 6)], dtype=np.float32).view(np.uint32).astype(np.int64)
    bits = np.concatenate([np.arange(low, high + 1, 397), np.arange(low, low + 50_000), np.arange(high - 50_000, high + 1),
                           (tens[:, None] + np.arange(-500, 500)).reshape(-1)]).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[(np.abs(x.astype(np.float64)) >= 1e-4) & (np.abs(x) < 1e6)]
    for values in (x, -x):
        assert orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY) == numpy_json(values)


@pytest.mark.parametrize("nan", ["string", "bare"])
@pytest.mark.parametrize("shape", [(1,), (2,), (97,), (13, 3), (5, 1, 4), (4, 6, 2), (3, 1, 1, 2)])
def test_values_outside_the_range_are_spliced_in_anywhere(shape, nan):
    """Each odd value at every position of a small tensor (first, last, a row's ends), then runs of them."""
    size = int(np.prod(shape))
    base = torch.randn(shape, generator=torch.Generator().manual_seed(size))
    for position in range(size):
        for odd in (ODD[position % len(ODD)], ODD[(position * 7 + 3) % len(ODD)]):
            t = base.clone()
            t.view(-1)[position] = odd
            assert tensortext.tensor_json(t, nan).decode() == slow_json(t, nan)
    t = base.clone()
    t.view(-1)[::2] = torch.tensor(ODD * size)[: (size + 1) // 2]
    assert tensortext.tensor_json(t, nan).decode() == slow_json(t, nan)


@pytest.mark.parametrize("shape", [(3 * tensortext.CHUNK + 5,), (tensortext.CHUNK // 3, 7), (2, tensortext.CHUNK + 1)])
def test_big_tensors_with_sparse_odd_values_render_as_numpy_prints_them(shape):
    """Normal data: a tiny value every ~10 000 (randn's own rate), the leaves spliced, not handed to float32text."""
    t = torch.randn(shape, generator=torch.Generator().manual_seed(3))
    flat = t.view(-1)
    flat[::4099] *= 1e-6
    flat[7::10007] = 2e7
    flat[11::50021] = float("nan")
    assert float32json.json_pieces(t.reshape(-1)[: tensortext.CHUNK].numpy(), False) is not None
    assert tensortext.tensor_json(t).decode() == slow_json(t, "string")


def test_mostly_odd_values_go_to_float32text_and_print_the_same():
    bits = np.random.default_rng(17).integers(0, 2 ** 32, 100_000, dtype=np.uint64).astype(np.uint32)
    t = torch.from_numpy(bits.view(np.float32).copy())
    assert float32json.json_pieces(t.numpy(), True) is None  # most random bit patterns are tiny or huge
    for nan in ("string", "bare"):
        assert tensortext.tensor_json(t, nan).decode() == slow_json(t, nan)


def test_spliced_json_reads_back_to_the_same_values():
    t = torch.randn(5000, generator=torch.Generator().manual_seed(9))
    t[::37] = torch.tensor(ODD[:8]).repeat(20)[: len(t[::37])]
    back = torch.tensor(json.loads(tensortext.tensor_json(t, "bare")), dtype=torch.float32)
    assert torch.equal(back, t) and torch.equal(back.signbit(), t.signbit())


def test_an_orjson_that_lays_digits_out_otherwise_hands_every_piece_to_float32text(monkeypatch):
    t = torch.randn(1000)
    assert float32json.AGREES  # the installed orjson is numpy's layout: the fast path is the one tested above
    monkeypatch.setattr(float32json, "AGREES", False)
    assert float32json.json_pieces(t.numpy(), bare=False) is None
    assert tensortext.tensor_json(t).decode() == slow_json(t, "string")
