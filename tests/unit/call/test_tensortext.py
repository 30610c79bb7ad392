"""Tensor values as JSON text: the vectorized float32 formatter prints exactly what numpy's str prints,
the table for 8/16-bit floats what the slow path prints, and the nesting what json.dumps nests."""
import json

import numpy as np
import pytest
import torch

from torchsh.text import float32text, tensortext

BARE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def fast_texts(x, bare=True):
    out, lengths = float32text.texts(x, bare)
    return [out[i, :lengths[i]].tobytes().decode() for i in range(len(x))]


def numpy_texts(x):
    return [BARE.get(s, s) for s in np.asarray(x, dtype=np.float32).astype(str).tolist()]


def test_float32_text_equals_numpy_str_on_a_million_random_bit_patterns():
    bits = np.random.default_rng(11).integers(0, 2 ** 32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    assert fast_texts(x) == numpy_texts(x)


def test_float32_text_equals_numpy_str_on_common_data():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(200_000), rng.uniform(0, 1, 100_000), np.arange(-5000, 5000) / 100,
                        np.arange(-3000, 3000), rng.standard_normal(50_000) * 1e6]).astype(np.float32)
    assert fast_texts(x) == numpy_texts(x)


def test_float32_text_equals_numpy_str_at_the_edges():
    """Powers of two (the interval below is half the one above), powers of ten, their neighbours,
    the positional/scientific switch at 1e-4 and 1e6, subnormals, zeros, the extremes, non-finite values."""
    p2 = np.ldexp(np.float32(1), np.arange(-149, 128)).astype(np.float32)
    p10 = np.array([float("1e%d" % i) for i in range(-45, 39)], dtype=np.float32)
    base = np.concatenate([p2, p10, p10 * 3, p10 * 7.5, [1e-4, 1e6, 999999.9, 9.9999e-5, 0.0, 3.4028235e38,
                                                       np.finfo(np.float32).tiny, np.nan, np.inf]]).astype(np.float32)
    x = np.concatenate([base, np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(0))])
    x = np.concatenate([x, -x])
    assert fast_texts(x) == numpy_texts(x)


def test_nonfinite_float32_texts_are_json_strings_unless_bare():
    x = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=np.float32)
    assert fast_texts(x, bare=False) == ['"NaN"', '"Infinity"', '"-Infinity"', "1.5"]
    assert fast_texts(x, bare=True) == ["NaN", "Infinity", "-Infinity", "1.5"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2])
def test_small_float_tables_equal_the_slow_path(dtype):
    count = 1 << (8 * torch.empty((), dtype=dtype).element_size())
    flat = torch.arange(count, dtype=torch.int32)
    flat = torch.where(flat >= count // 2, flat - count, flat).to(torch.int8 if count == 256 else torch.int16).view(dtype)
    got = tensortext.tensor_json(flat, "bare").decode()[1:-1].split(",")
    assert got == tensortext.float_texts(flat, bare=True)


def slow_json(t, nan="string"):
    """The obviously right rendering: per-value texts, nested by recursion."""
    t = t.detach()
    if t.dtype.is_complex:
        t = torch.view_as_real(t)
    if t.dtype == torch.bool or not t.dtype.is_floating_point:
        return json.dumps(t.tolist(), separators=(",", ":"))
    texts = tensortext.float_texts(t.reshape(-1), bare=nan == "bare")

    def nest(offset, shape):
        if not shape:
            return texts[offset]
        inner = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return "[" + ",".join(nest(offset + i * inner, shape[1:]) for i in range(shape[0])) + "]"
    return nest(0, list(t.shape)) if t.numel() else json.dumps(t.tolist(), separators=(",", ":"))


SHAPES = [(), (1,), (7,), (3, 4), (2, 3, 4), (1, 1, 1, 5), (0,), (0, 3), (3, 0), (2, 1, 3, 1, 2)]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.bool,
          torch.complex64, torch.uint8]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("nan", ["string", "bare"])
def test_tensor_json_equals_the_slow_rendering(dtype, shape, nan):
    torch.manual_seed(len(shape) * 31 + DTYPES.index(dtype))
    t = torch.randn(shape, dtype=torch.float64) * 50
    if t.numel() > 2:
        t.view(-1)[:3] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    t = t.to(dtype) if dtype != torch.bool else t > 0
    if not (dtype.is_floating_point or dtype.is_complex) and dtype != torch.bool:
        t = torch.randint(0, 100, shape, dtype=dtype)
    assert tensortext.tensor_json(t, nan).decode() == slow_json(t, nan)


@pytest.mark.parametrize("shape", [(3 * tensortext.CHUNK + 5,), (3, tensortext.CHUNK + 1), (tensortext.CHUNK // 3, 7),
                                   (2, 2, tensortext.CHUNK // 2 + 3)])
def test_big_tensors_render_in_pieces_that_join_to_the_same_json(shape):
    torch.manual_seed(1)
    t = torch.randn(shape)
    t.view(-1)[::1000] = float("nan")
    text = tensortext.tensor_json(t).decode()
    assert text == slow_json(t)
    back = torch.tensor(json.loads(text.replace('"NaN"', "NaN")))
    assert torch.equal(back.isnan(), t.isnan()) and torch.equal(back.nan_to_num(), t.nan_to_num())


def test_output_is_strict_json_by_default():
    t = torch.tensor([[float("nan"), 1.0], [float("inf"), -float("inf")]], dtype=torch.float64)

    def refuse(token):
        raise ValueError("bare %s" % token)
    assert json.loads(tensortext.tensor_json(t), parse_constant=refuse) == [["NaN", 1.0], ["Infinity", "-Infinity"]]


def test_value_renders_the_snapshot_taken_when_it_ran():
    """`value` runs under the tensor lock and copies; the text is made later, outside the lock, so a
    change to the tensor in between (an optimizer step) must not show."""
    from torchsh.verbs.tensors import value
    t = torch.tensor([1.0, float("nan")])
    late = value(None, t)
    t.add_(10)
    assert late.render() == b'[1.0,"NaN"]'
    assert late.render("bare", end=b"\n") == b"[1.0,NaN]\n"
    assert value(None, t, nan="string").render("bare") == b'[11.0,"NaN"]'  # the verb's own --nan wins
