"""float32 arrays as JSON with numpy's text for each value, by orjson where the two agree.

orjson writes a float32 array's shortest round-trip digits in C (~40 ns a value, against ~170 for
float32text.py's numpy arithmetic). Inside numpy's positional range (1e-4 <= |x| < 1e6) and for zeros its
text is numpy's own, byte for byte (checked once on all 279M float32 in that range, with orjson 3.13; the
tests sample it); outside it the two lay the same digits out differently (1e-05 against 0.00001, 1e+06
against 1000000.0), and orjson writes null for NaN and infinities. So orjson writes the runs between those
other values, numpy writes them, and the pieces are joined in order. An array with many of them is
float32text's (None here).
"""
import numpy as np
import orjson

_NUMPY = orjson.OPT_SERIALIZE_NUMPY
_LOW = np.nextafter(np.float32(1e-4), np.float32(1))  # the least float32 >= 1e-4 (float32(1e-4) is below)
_HIGH = np.float32(1e6)
MOST_ODD = 1 / 64  # more values outside the range than this share (over ndim): float32text is faster
_BARE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def json_pieces(x, bare):
    """The JSON of x (a C-contiguous float32 array, 1-D or more) as a list of bytes-like pieces, or None
    when too many of its values lie outside numpy's positional range. Non-finite values are the strings
    "NaN", "Infinity", "-Infinity", or with bare=True those bare tokens."""
    magnitude = np.abs(x)
    odd = (magnitude < _LOW) | (magnitude >= _HIGH)  # NaN compares false: marked below
    odd &= magnitude != 0
    odd |= np.isnan(magnitude)
    count = int(np.count_nonzero(odd))
    if not AGREES:
        return None
    if not count:
        return [orjson.dumps(x, option=_NUMPY)]
    if count * x.ndim > x.size * MOST_ODD:  # each costs a few calls per dimension
        return None
    texts = iter(numpy_texts(x[odd], bare))
    pieces = []
    _spliced(x, odd, texts, pieces)
    return pieces


def _agrees():
    """orjson lays out a sample across the range as numpy does: another orjson version may not (3.11.7 changed
    its float library), and then every piece is float32text's rather than a number written otherwise."""
    rng = np.random.default_rng(0)
    sample = (10.0 ** rng.uniform(-4, 6, 4096) * rng.choice((-1, 1), 4096)).astype(np.float32)
    sample = sample[(np.abs(sample) >= _LOW) & (np.abs(sample) < _HIGH)]
    sample = np.concatenate([sample, np.float32([0.0, -0.0, 0.1, 1 / 3, 999999.94, 1e5, 1.0, 0.5])])
    numpy_text = b"[" + b",".join(t.encode() for t in sample.astype(str).tolist()) + b"]"
    return orjson.dumps(sample, option=_NUMPY) == numpy_text


def numpy_texts(x, bare):
    """numpy's str of each value of a 1-D float32 array (as bytes), non-finite ones as JSON wants them."""
    texts = []
    for text in x.astype(str).tolist():
        if text in _BARE:
            text = _BARE[text] if bare else '"%s"' % _BARE[text]
        texts.append(text.encode())
    return texts


def _spliced(x, odd, texts, pieces):
    """Append the JSON of x to pieces: runs of (first-axis) items with no odd value by orjson, one call each,
    the others item by item (a value's text from texts, a sub-array recursively)."""
    rows = np.unique(np.flatnonzero(odd) // (x.size // len(x)))  # the items holding one, in order
    pieces.append(b"[")
    start = 0
    for i in rows.tolist():
        if i > start:
            pieces += [memoryview(orjson.dumps(x[start:i], option=_NUMPY))[1:-1], b","]
        if x.ndim == 1:
            pieces.append(next(texts))
        else:
            _spliced(x[i], odd[i], texts, pieces)
        pieces.append(b",")
        start = i + 1
    if start < len(x):
        pieces.append(memoryview(orjson.dumps(x[start:], option=_NUMPY))[1:-1])
    else:
        pieces.pop()  # the comma after the last item
    pieces.append(b"]")


AGREES = _agrees()
