"""Per-item transforms, applied lazily in __getitem__ of a wrapping dataset (`torch data transform`).

Each step changes one field of the item, in this order: resize, center_crop, one_hot, dtype,
standardize, normalize. The image steps are torchvision's tensor transforms written in plain torch:

    resize [h, w]     F.interpolate(mode="bilinear", align_corners=False, antialias=True); one size s
                      scales the shorter edge to s (the longer to int(s * long / short)), as Resize(s)
    center_crop h w   top = round((H - h) / 2), left = round((W - w) / 2); zero padding where the crop
                      is larger than the image, as CenterCrop
    normalize m s     (x - m) / s; per channel (C×H×W items) when m and s have one value per channel,
                      otherwise broadcast along the last dimension, as Normalize
    one_hot n         F.one_hot(label, n) of an integer label (int64)
    standardize m s   (x - m) / s with statistics learned from a dataset (standardize.py: StandardScaler)

The steps are data (a dataclass), not closures, so a TransformedDataset pickles into DataLoader workers.
"""
import functools
from dataclasses import dataclass

import torch
import torch.nn.functional as F
import torch.utils.data

from torchsh.data.standardize import standardize
from torchsh.errors import TorchshError, bad_argument
from torchsh.vocab import dtype_name

ORDER = ("resize", "center_crop", "one_hot", "dtype", "standardize", "normalize")


@dataclass(frozen=True)
class Step:
    op: str        # one of ORDER
    field: int     # the item's field it changes (0-based, after negative indices are resolved)
    args: tuple


class TransformedDataset(torch.utils.data.Dataset):
    """dataset's items with steps applied to their fields, one item at a time."""

    def __init__(self, dataset, steps):
        self.dataset, self.steps = dataset, tuple(steps)

    def __len__(self):
        return len(self.dataset)

    @property
    def standardization(self):
        """{field, mean, std} of its --standardize step (the statistics learned), or None."""
        step = next((s for s in self.steps if s.op == "standardize"), None)
        return None if step is None else {"field": step.field, "mean": step.args[0], "std": step.args[1]}

    def __getitem__(self, index):
        return self._apply(self.dataset[index])

    def __getitems__(self, indices):
        """A batch (DataLoader's fetcher): the wrapped dataset's batch read, when it has one, then each item."""
        if hasattr(self.dataset, "__getitems__"):
            return [self._apply(item) for item in self.dataset.__getitems__(indices)]
        return [self._apply(self.dataset[i]) for i in indices]

    @property
    def batchable(self):
        """Whether apply_to_batch gives each item's values as _apply does (every step elementwise or per item)."""
        return all(s.op in _BATCHED for s in self.steps)

    def apply_to_batch(self, fields):
        """The steps applied to a batch at once: fields are the items' fields stacked, item first (as
        DataLoader's collate stacks them). Only when batchable; item by item, the values are the same bit for bit."""
        fields = list(fields)
        for step in self.steps:
            fields[step.field] = _BATCHED[step.op](fields[step.field], *step.args)
        return fields

    def _apply(self, item):
        item = list(item) if isinstance(item, (tuple, list)) else [item]
        for step in self.steps:
            item[step.field] = _FUNCTIONS[step.op](item[step.field], *step.args)
        return tuple(item)


def resize(t, size):
    image = _image(t, "resize")
    h, w = image.shape[-2:]
    if len(size) == 1:
        short, long = (h, w) if h <= w else (w, h)
        new_short, new_long = size[0], int(size[0] * long / short)
        size = (new_short, new_long) if h <= w else (new_long, new_short)
    batch = image.reshape(1, 1, h, w) if image.dim() == 2 else image.reshape(-1, *image.shape[-3:])
    if not batch.is_floating_point():
        batch = batch.to(torch.float32)
    out = F.interpolate(batch, size=tuple(size), mode="bilinear", align_corners=False, antialias=True)
    out = out.reshape(*image.shape[:-2], *size)
    if not t.is_floating_point():  # torchvision rounds integer images back to their dtype
        out = out.round().to(t.dtype)
    return out


def center_crop(t, size):
    image = _image(t, "center_crop")
    ch, cw = (size[0], size[0]) if len(size) == 1 else size
    h, w = image.shape[-2:]
    if ch > h or cw > w:
        pad = [(cw - w) // 2 if cw > w else 0, (cw - w + 1) // 2 if cw > w else 0,
               (ch - h) // 2 if ch > h else 0, (ch - h + 1) // 2 if ch > h else 0]
        image = F.pad(image, pad, value=0)
        h, w = image.shape[-2:]
    top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
    return image[..., top:top + ch, left:left + cw]


def normalize(t, mean, std, batch=False):
    """batch: t is a batch of items, item first (the per-channel rule is the item's)."""
    if not t.is_floating_point():
        raise TorchshError("dtype_error", "normalize needs a floating point field, this one is %s" % dtype_name(t.dtype),
                           "add --dtype float32 (converted before normalizing)")
    m = torch.as_tensor(mean, dtype=t.dtype)
    s = torch.as_tensor(std, dtype=t.dtype)
    if (s == 0).any():
        raise bad_argument("--std has a zero, which would divide by zero")
    if t.dim() - batch >= 3 and m.numel() > 1:  # C×H×W: one value per channel
        m, s = m.view(-1, 1, 1), s.view(-1, 1, 1)
    return (t - m) / s


def one_hot(t, n):
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TorchshError("dtype_error", "one_hot needs integer class labels, this field is %s" % dtype_name(t.dtype),
                           "open a csv with --target_dtype int64")
    return F.one_hot(t.to(torch.int64), n)


def to_dtype(t, dtype):
    return t.to(dtype)


def _image(t, op):
    if t.dim() < 2:
        raise TorchshError("shape_mismatch", "%s needs an image (H×W or C×H×W), this field has shape %s"
                           % (op, list(t.shape)), "--field picks the image field")
    return t


_FUNCTIONS = {"resize": resize, "center_crop": center_crop, "one_hot": one_hot, "dtype": to_dtype,
              "standardize": standardize, "normalize": normalize}
# the steps whose batch form is the item's, item for item (resize interpolates, center_crop pads: per item)
_BATCHED = {"one_hot": one_hot, "dtype": to_dtype, "standardize": functools.partial(standardize, batch=True),
            "normalize": functools.partial(normalize, batch=True)}
