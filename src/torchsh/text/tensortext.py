"""A tensor's data as compact JSON text, fast enough for millions of values.

Floats print as the shortest text that reads back to the same value in the tensor's own dtype, as
numpy prints them (`str(np.float32(x))`: 0.1 in float32 is `0.1`, 1e6 is `1e+06`); float64 as
Python's repr. Non-finite values are the strings "NaN", "Infinity", "-Infinity" (valid JSON,
RFC 8259), or with nan="bare" Python's bare tokens NaN, Infinity, -Infinity.

The work goes by pieces of at most CHUNK elements, each a whole sub-tensor (rows), so each piece is
JSON on its own, its temporaries fit in the CPU cache, and no single call holds the interpreter for long.
float32 is formatted by orjson (float32json.py: C, numpy's text), or by float32text.py (vectorized) where
many values lie outside the range in which the two agree; 16-bit and 8-bit floats by a table of every bit
pattern; float64, ints and bools by json.dumps (C). Callers render a snapshot taken under the tensor lock,
after releasing it, and join the pieces (bytes and views of them) once.
"""
import functools
import json
import re

import numpy as np
import torch

from torchsh.text import float32json, float32text

CHUNK = 1 << 15  # values a piece: its float64 temporaries stay in the CPU cache (2x faster than 1 << 18)
NAN_MODES = ("string", "bare")
_BARE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_BARE_RE = re.compile(rb"-?Infinity|NaN")


def tensor_json(t, nan="string"):
    """The JSON bytes of a tensor's data (nested lists; a 0-d tensor is one value)."""
    return b"".join(json_pieces(snapshot(t), nan))


def snapshot(t):
    """A private, contiguous CPU copy of t's data: take it under the tensor lock, format it after."""
    t = t.detach().resolve_conj().resolve_neg()
    if t.dtype.is_complex:
        t = torch.view_as_real(t)  # complex values as [real, imag] pairs
    return t.to("cpu", copy=True, memory_format=torch.contiguous_format)


def json_pieces(t, nan="string"):
    """The JSON bytes of t (a snapshot) in bytes-like pieces, in order: brackets, commas and leaves (whole
    sub-tensors of at most CHUNK values). One thread: more would contend for the interpreter lock
    with the requests the daemon answers meanwhile."""
    pieces = []
    for part in _parts(t):
        if isinstance(part, bytes):
            pieces.append(part)
        elif part[1]:
            pieces += _unbracketed(_leaf(part[0], nan))
        else:
            pieces += _leaf(part[0], nan)
    return pieces


def _unbracketed(leaf):
    """A leaf's pieces without its own outer brackets (views: its text is not copied)."""
    if len(leaf) == 1:
        return [memoryview(leaf[0])[1:-1]]
    return [memoryview(leaf[0])[1:], *leaf[1:-1], memoryview(leaf[-1])[:-1]]


def _parts(t):
    """Brackets and commas (bytes) and leaves (sub-tensor, whether to drop its own brackets)."""
    if t.numel() <= CHUNK or t.dim() == 0:
        yield (t, False)
        return
    row = t[0].numel()
    yield b"["
    if row >= CHUNK // 2:  # big rows: each row on its own, recursively
        for i in range(t.shape[0]):
            if i:
                yield b","
            yield from _parts(t[i])
    else:  # several rows a leaf, without the leaf's own brackets
        step = max(1, CHUNK // max(row, 1))
        for a in range(0, t.shape[0], step):
            if a:
                yield b","
            yield (t[a:a + step], True)
    yield b"]"


def _leaf(t, nan):
    """The JSON of a leaf (a sub-tensor of at most CHUNK values) as a list of bytes-like pieces."""
    if t.dtype == torch.float32 and t.dim() and t.numel():
        pieces = float32json.json_pieces(t.numpy(), nan == "bare")  # orjson, most of the time
        if pieces is not None:
            return pieces
    return [_leaf_text(t, nan)]


def _leaf_text(t, nan):
    if t.numel() == 0:
        return json.dumps(t.tolist(), separators=(",", ":")).encode()
    margin = _margin(t.dim())
    if t.dtype == torch.float32:
        rows, _ = float32text.texts(t.reshape(-1).numpy(), nan == "bare", margin)
        return nested(rows, margin, list(t.shape))
    if t.dtype.is_floating_point and t.dtype != torch.float64:
        table = _small_float_table(t.dtype, nan == "bare")
        bits = t.reshape(-1).view(torch.uint8 if t.element_size() == 1 else torch.int16).numpy()
        index = bits.astype(np.int64) & (0xFF if t.element_size() == 1 else 0xFFFF)
        rows = np.zeros((len(index), margin + table.shape[1]), dtype=np.uint8)
        rows[:, margin:] = table[index]
        return nested(rows, margin, list(t.shape))
    text = json.dumps(t.tolist(), separators=(",", ":"), allow_nan=True).encode()
    if t.dtype == torch.float64 and nan != "bare" and not bool(torch.isfinite(t).all()):
        text = _BARE_RE.sub(lambda m: b'"' + m.group() + b'"', text)
    return text


def _margin(dims):
    """Room before each value's text for what comes between it and the one before: "]]", ",", "[[".
    A 1-D list needs one byte (the comma): its rows stay 16 bytes."""
    return {0: 0, 1: 1}.get(dims, 16 * ((2 * dims + 1 + 15) // 16))


def nested(rows, margin, shape):
    """JSON of a tensor from its values' texts: rows is N x W bytes, each value's text from column
    `margin`, zero bytes elsewhere. Between two values of a nested list come as many "]" as "[" (one per
    dimension the next value starts) around the comma; written right before each text, then every zero
    byte is dropped."""
    if not shape:
        return rows[0, margin:].tobytes().rstrip(b"\0")
    r = len(shape)
    rows[0, margin - r:margin] = ord("[")
    rows[1:, margin - 1] = ord(",")
    block = 1
    for level, size in enumerate(reversed(shape[1:]), 1):  # values that start a block of this level (but the first)
        block *= size
        rows[block::block, margin - 2 * level - 1:margin] = np.frombuffer(b"]" * level + b"," + b"[" * level,
                                                                          dtype=np.uint8)
    flat = rows.reshape(-1)
    return flat[flat != 0].tobytes() + b"]" * r


@functools.lru_cache(maxsize=None)
def _small_float_table(dtype, bare):
    """Texts of every bit pattern of a float dtype of 8 or 16 bits (as `float_texts` makes them)."""
    count = 1 << (8 * torch.empty((), dtype=dtype).element_size())
    signed = torch.arange(count, dtype=torch.int32)
    signed = torch.where(signed >= count // 2, signed - count, signed)
    patterns = signed.to(torch.int8 if count == 256 else torch.int16).view(dtype)
    texts = float_texts(patterns, bare)
    table = np.array([s.encode() for s in texts], dtype="S%d" % max(len(s) for s in texts))
    return table.view(np.uint8).reshape(count, -1)


def float_texts(flat, bare=True):
    """Per-value texts of a 1-D tensor (the slow, obviously right way: numpy's str, Python's repr)."""
    flat = flat.detach().cpu()
    if not flat.dtype.is_floating_point:
        return [json.dumps(x) for x in flat.tolist()]
    if flat.dtype == torch.float64:
        out = np.array([repr(x) for x in flat.tolist()], dtype=object)
    elif flat.dtype in (torch.float32, torch.float16):
        out = flat.numpy().astype(str).astype(object)
    else:
        out = _shortest_texts(flat)
    if bare:
        return [_BARE.get(s, s) for s in out]
    return ['"%s"' % _BARE[s] if s in _BARE else s for s in out]


def _shortest_texts(flat):
    """Shortest decimal text reading back to the same value in a dtype numpy lacks (bfloat16, float8)."""
    wide = flat.double().numpy()
    result = np.empty(len(wide), dtype=object)
    todo = np.arange(len(wide))
    for digits in range(1, 18):
        if not len(todo):
            break
        texts = np.array(["%.*g" % (digits, x) for x in wide[todo]], dtype=object)
        back = torch.tensor([float(s) for s in texts], dtype=torch.float64).to(flat.dtype).double().numpy()
        ok = (back == wide[todo]) | (np.isnan(back) & np.isnan(wide[todo]))
        result[todo[ok]] = texts[ok]
        todo = todo[~ok]
    return [s if any(c in s for c in ".eni") else s + ".0" for s in result]
