"""float32 values as numpy's shortest round-trip text (`str(np.float32(x))`), vectorized.

numpy formats one value at a time (~300 ns each); this finds the same digits with array arithmetic.
For each value x the shortest decimal that reads back to x is the first digit count k (1..9) at which
a k-digit decimal lies strictly between the midpoints to x's float32 neighbours; of two such, the one
closer to x (numpy's Dragon4 does the same). The search runs in float64, in units of the k-th digit;
any value whose answer could depend on float64 rounding (a candidate within 2**-46 of a midpoint, a
tie between two candidates), and zeros, subnormals, the largest float32 and non-finite values, are
formatted by numpy itself. tests/unit/call/test_tensortext.py compares the
two on millions of values.
"""
import functools

import numpy as np

_P10_ALL = np.array([float("1e%d" % i) for i in range(-60, 61)])  # 10**i at [i + 60], correctly rounded
_DIGITS4 = np.frombuffer(b"".join(b"%04d" % i for i in range(10000)), dtype=np.uint32)
_SMALLEST_NORMAL, _LARGEST = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)
_TOL = 2.0 ** -46  # relative: far above float64 rounding (2**-53), far below float32 spacing (2**-24)
_P10_INT = np.array([10 ** i for i in range(1, 10)], dtype=np.int64)
_ROW = np.complex128  # any 16-byte number: a text row moved in one piece
WIDTH = 16         # '-0.000123456789' (15) is the longest text


def texts(x, bare=True, margin=0):
    """(N x width uint8 matrix, N lengths) for a 1-D float32 array: each value's text left aligned from
    column `margin`, zero bytes elsewhere (room for what goes before it). margin is 0, 1 (the texts, 15
    bytes at most, share a 16-byte row with one byte before them) or a multiple of 16.
    Non-finite values are NaN/Infinity/-Infinity (bare) or the JSON strings "NaN"/"Infinity"/"-Infinity"."""
    assert margin in (0, 1) or margin % WIDTH == 0
    out = np.zeros((len(x), WIDTH * (1 + margin // WIDTH)), dtype=np.uint8)
    with np.errstate(all="ignore"):  # NaN payloads, infinities: they take numpy's path below
        lengths = _texts(np.ascontiguousarray(x, dtype=np.float32), bare, out, margin)
    return out, lengths


def _texts(x, bare, out, margin):
    lengths = np.zeros(len(x), dtype=np.int64)
    wide = np.abs(x.astype(np.float64))
    fast = (wide >= _SMALLEST_NORMAL) & (wide < _LARGEST)  # the largest float32 has no upper neighbour
    rows = np.arange(len(x)) if fast.all() else np.flatnonzero(fast)
    if len(rows):
        xs, a = (x, wide) if len(rows) == len(x) else (x[rows], wide[rows])
        m, exp10, sure = _shortest_digits(xs, a)
        if not sure.all():
            fast[rows[~sure]] = False
            rows, xs, a, m, exp10 = rows[sure], xs[sure], a[sure], m[sure], exp10[sure]
        _layout(out, margin, lengths, rows, m, exp10, np.signbit(xs), a)
    _by_numpy(out, margin, lengths, np.flatnonzero(~fast), x, bare)
    return lengths


def _shortest_digits(x, a):
    """For each |x| = a: the digits m (an int, no trailing zeros) and exponent n with a ~ m * 10**-n,
    and whether the answer is certain."""
    e = np.floor(np.log10(a)).astype(np.int64)
    e -= a < _P10_ALL[e + 60]     # log10 may be off by one next to a power of ten
    e += a >= _P10_ALL[e + 61]
    ax = np.abs(x)
    lo = (a + np.nextafter(ax, np.float32(0)).astype(np.float64)) * 0.5  # exact: float32 sums in float64
    hi = (a + np.nextafter(ax, np.float32(np.inf)).astype(np.float64)) * 0.5
    # The least k at which the interval spans a whole unit surely holds a k-digit decimal; fewer digits
    # may fit too (less often the fewer): try k, then k-1, and go on down (or up) only where needed.
    k = np.clip(np.ceil(-np.log10(hi - lo)).astype(np.int64) + 1 + e, 1, 9)
    fits, m, n, edge = _try(a, e, k, lo, hi)
    sure = ~edge
    below = np.maximum(k - 1, 1)
    fits_below, m_below, n_below, edge_below = _try(a, e, below, lo, hi)
    fits_below &= k > 1
    sure &= ~(edge_below & (k > 1))
    down = np.flatnonzero(fits_below)
    m[down], n[down] = m_below[down], n_below[down]
    _walk(down, below[down] - 1, -1, a, e, lo, hi, m, n, sure)
    up = np.flatnonzero(~fits & ~fits_below)
    _walk(up, k[up] + 1, 1, a, e, lo, hi, m, n, sure)
    m, n = _strip_zeros(m, n)
    return m, n, sure


def _walk(rows, k, step, a, e, lo, hi, m, n, sure):
    """Going down (step -1): keep the fewest digits that fit; going up: stop at the first that fits."""
    while len(rows):
        live = (k >= 1) & (k <= 9)
        rows, k = rows[live], k[live]
        if not len(rows):
            return
        fits, m_k, n_k, edge = _try(a[rows], e[rows], k, lo[rows], hi[rows])
        sure[rows[edge]] = False
        take = fits if step < 0 else fits
        m[rows[take]], n[rows[take]] = m_k[take], n_k[take]
        more = fits if step < 0 else ~fits
        rows, k = rows[more], k[more] + step


def _try(a, e, k, lo, hi):
    """Does a k-digit decimal fall strictly between lo and hi? The closer one of the two that bracket a
    (value m * 10**-n), and whether any of it is too close to call. Works in units of the k-th digit."""
    n = k - 1 - e
    scale = _P10_ALL[n + 60]
    p, lp, hp = a * scale, lo * scale, hi * scale
    tol = p * _TOL
    c = np.floor(p)
    above, below = lp + tol, hp - tol
    in0 = (c > above) & (c < below)
    c1 = c + 1
    in1 = (c1 > above) & (c1 < below)
    edge = (np.floor(above) >= lp - tol) | (np.floor(hp + tol) >= below)  # an integer next to an end
    frac = p - c
    both = in0 & in1
    edge |= both & (np.abs(frac - 0.5) <= tol)  # a tie: numpy's rule decides
    m = c.astype(np.int64) + np.where(both, frac > 0.5, in1)
    return in0 | in1, m, n, edge


def _strip_zeros(m, n):
    """Drop trailing zeros (only a carry, 9.99.. -> 10, makes them in a shortest answer)."""
    tenth = m // 10
    zeros = (tenth * 10 == m) & (m > 0)
    while zeros.any():
        m = np.where(zeros, tenth, m)
        n = np.where(zeros, n - 1, n)
        tenth = m // 10
        zeros = (tenth * 10 == m) & (m > 0)
    return m, n


def _layout(out, margin, lengths, rows, m, n, negative, a):
    """Write each value's text into out[rows, margin:]: positional for 1e-4 <= |x| < 1e6 (numpy's float32 rule),
    else scientific. Values that share sign, form, digit count and exponent share one layout (a list of
    source columns): sorted by it, each layout fills a contiguous block with one column gather."""
    if not len(rows):
        return
    k = np.searchsorted(_P10_INT, m, side="right") + 1
    exp = k - 1 - n
    positional = (a >= 1e-4) & (a < 1e6)
    key = (((positional * 2 + negative) * 10 + k) * 128 + (exp + 64)).astype(np.int16)
    order = np.argsort(key, kind="stable")
    sorted_keys = key[order]
    source = _source(m[order])
    text = np.empty((len(order), WIDTH), dtype=np.uint8)
    size = np.empty(len(order), dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    for start, end in zip(starts.tolist(), np.r_[starts[1:], len(order)].tolist()):
        i = order[start]
        columns, length = _columns(bool(positional[i]), bool(negative[i]), int(k[i]), int(exp[i]), margin % WIDTH)
        np.take(source[start:end], columns, axis=1, out=text[start:end])
        size[start:end] = length
    target = rows[order]
    out.view(_ROW)[target, margin // WIDTH] = text.view(_ROW)[:, 0]  # 16-byte texts moved as one number each
    lengths[target] = size


# A source row: m's 9 zero-padded digits at columns 3..11, then constant characters.
_CONSTANTS = b"0123456789-+.e\0\0"
_CHAR = {c: 16 + i for i, c in enumerate(_CONSTANTS[:14])}
_ZERO_BYTE = 30


@functools.lru_cache(maxsize=None)
def _columns(positional, negative, k, exp, lead):
    """A layout as the source columns of its WIDTH output bytes (`lead` zero bytes, the text, zero bytes),
    and the text's length."""
    columns = [_ZERO_BYTE] * lead
    for piece in _pieces(positional, negative, k, exp):
        if isinstance(piece, bytes):
            columns += [_CHAR[c] for c in piece]
        else:
            columns += range(12 - k + piece[0], 12 - k + piece[1])  # digits first..last-1 of the k digits
    return np.array(columns + [_ZERO_BYTE] * (WIDTH - len(columns)), dtype=np.intp), len(columns) - lead


def _pieces(positional, negative, k, exp):
    """A layout: literal bytes and (first, last) digit ranges, in order."""
    out = [b"-"] if negative else []
    if positional and exp >= 0:
        out.append((0, min(k, exp + 1)))
        out += [b"0" * max(0, exp + 1 - k), b"."]
        out.append((exp + 1, k) if k > exp + 1 else b"0")
    elif positional:
        out += [b"0." + b"0" * (-exp - 1), (0, k)]
    else:
        out.append((0, 1))
        if k > 1:
            out += [b".", (1, k)]
        out.append(b"e%s%02d" % (b"-" if exp < 0 else b"+", abs(exp)))
    return [p for p in out if p != b""]


def _source(m):
    """Source rows for m (< 10**9): N x 32 bytes, m's digits as ASCII at 3..11, _CONSTANTS at 16..31."""
    words = np.empty((len(m), 8), dtype=np.uint32)
    high = m // 10000  # floor_divide by a constant is fast in numpy (libdivide); divmod is not
    low = m - high * 10000
    top = high // 10000
    mid = high - top * 10000
    words[:, 0], words[:, 1], words[:, 2] = _DIGITS4[top], _DIGITS4[mid], _DIGITS4[low]
    words[:, 3] = 0
    words[:, 4:] = np.frombuffer(_CONSTANTS, dtype=np.uint32)
    return words.view(np.uint8).reshape(len(m), 32)


def _by_numpy(out, margin, lengths, rows, x, bare):
    """numpy's own text for the values the fast path leaves: zeros, non-finite, tiny, huge, too close to call."""
    if not len(rows):
        return
    texts = x[rows].astype(str).astype("<U16")
    for name, json_text in (("nan", "NaN"), ("inf", "Infinity"), ("-inf", "-Infinity")):
        texts[texts == name] = json_text if bare else '"%s"' % json_text
    lengths[rows] = np.char.str_len(texts)
    width = out.shape[1] - margin
    out[rows, margin:] = texts.astype("S%d" % width).view(np.uint8).reshape(len(rows), width)
