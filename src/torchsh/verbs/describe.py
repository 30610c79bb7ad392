"""`torch describe T`: what a tensor holds, in a few hundred bytes, whatever its size.

Shape, dtype, device, requires_grad, numel; min, max, mean and std over its finite values (NaN and
infinities counted apart); and a corner: the first few items along its last two dims. Never the whole
tensor, and never a whole copy of it: the values are read in pieces of PIECE elements (a float64 copy
of a 1e8-element tensor would be 800 MB), means and spreads combined piece by piece in float64 (Chan's
parallel formula). An agent's first look at a value (torch mcp's inspect), and a person's.
"""
import json
import math

import torch

from torchsh.errors import bad_argument
from torchsh.text import tensortext
from torchsh.verbs import verb
from torchsh.vocab import dtype_name

PIECE = 1 << 20     # elements read at once: ~8 MB as float64
MAX_CORNER = 32     # corner**2 numbers at most: 1,024


@verb("describe(Tensor input, *, int corner=4) -> Json", category="tensors", read_only=True,
      examples=("torch describe $(torch tensor '[[1, 2, NaN], [Infinity, 5, 6]]')",
                "torch describe $(torch arange 100000) --corner 2"))
def describe(ctx, input, corner=4):
    """Describe a tensor without printing it: shape, dtype, device, requires_grad, numel; min, max, mean and
    std (unbiased, as torch.std) of its finite values, and how many are NaN and how many infinite; and its
    corner: the first CORNER items along each of its last two dims (index 0 along the others), with their
    index ranges. Bounded memory at any size. Booleans and integers too; no finite value: the stats are null.

    Args:
        corner: items along each of the last two dims (0 to 32): at most CORNER**2 numbers
    """
    if not 0 <= corner <= MAX_CORNER:
        raise bad_argument("--corner must be 0 to %d, got %d" % (MAX_CORNER, corner),
                           "`torch value` prints a whole tensor; `torch index` picks a part")
    return summary(input, corner)


def summary(t, corner=4):
    """The JSON-ready description of tensor t (pure: the verb's whole work, tested against PyTorch)."""
    stats = _Stats()
    if not t.is_complex():
        for piece in pieces(t.detach()):
            stats.add(piece)
    return {"shape": list(t.shape), "dtype": dtype_name(t.dtype), "device": str(t.device),
            "requires_grad": t.requires_grad, "numel": t.numel(), **stats.json(t.dtype),
            "corner": corner_of(t.detach(), corner)}


def pieces(t, size=PIECE):
    """t's values, row-major, as 1-D tensors of at most `size` elements (a copy of no more than one piece at a
    time: a contiguous tensor is sliced, any other cut along its leading dims until a part fits)."""
    if t.numel() <= size:
        yield t.reshape(-1)
    elif t.is_contiguous() or t.dim() == 1:
        flat = t.view(-1) if t.is_contiguous() else t
        for start in range(0, flat.numel(), size):
            yield flat[start:start + size].reshape(-1)
    elif t[0].numel() > size // 2:
        for row in t:
            yield from pieces(row, size)
    else:
        rows = size // t[0].numel()
        for start in range(0, t.shape[0], rows):
            yield t[start:start + rows].reshape(-1)


class _Stats:
    """Running count, min, max, mean and sum of squared deviations (M2) of finite values; NaN and inf counts."""

    def __init__(self):
        self.n, self.mean, self.m2, self.nan, self.inf = 0, 0.0, 0.0, 0, 0
        self.low = self.high = None

    def add(self, piece):
        if piece.is_floating_point():
            finite = torch.isfinite(piece)
            if not bool(finite.all()):  # the common piece has none: no count, no copy
                nan = int(torch.isnan(piece).sum())
                self.nan, self.inf = self.nan + nan, self.inf + (piece.numel() - int(finite.sum()) - nan)
                piece = piece[finite]
        if piece.numel() == 0:
            return
        low, high = torch.aminmax(piece) if piece.dtype != torch.bool else (piece.min(), piece.max())
        self.low = low if self.low is None else torch.minimum(self.low, low)
        self.high = high if self.high is None else torch.maximum(self.high, high)
        var, mean = torch.var_mean(piece.to(torch.float64), correction=0)
        n, mean, m2 = piece.numel(), float(mean), float(var) * piece.numel()
        total = self.n + n
        delta = mean - self.mean
        self.m2 += m2 + delta * delta * self.n * n / total
        self.mean += delta * n / total
        self.n = total

    def json(self, dtype):
        n = self.n
        return {"min": None if n == 0 else _number(self.low), "max": None if n == 0 else _number(self.high),
                "mean": None if n == 0 else self.mean,
                "std": None if n < 2 else math.sqrt(self.m2 / (n - 1)), "nan": self.nan, "inf": self.inf}


def _number(t0):
    """A 0-d tensor's value as JSON, the shortest text that reads back to its dtype's value (float32's 0.1)."""
    return json.loads(tensortext.tensor_json(t0.reshape(1).cpu()))[0]


def corner_of(t, corner):
    """{"index": [[start, stop] per dim], "values": [row-major numbers]}: index 0 along the dims before the last
    two, the first `corner` along those. NaN and infinities as `torch value` writes them ("NaN", "Infinity")."""
    index = [[0, min(1, n)] for n in t.shape[:-2]] + [[0, min(corner, n)] for n in t.shape[-2:]]
    part = t[tuple(slice(a, b) for a, b in index)] if index else t
    values = json.loads(tensortext.tensor_json(part.reshape(-1).cpu())) if part.numel() else []
    return {"index": index, "values": values}
