"""`torch data transform D --standardize`: scikit-learn's StandardScaler, fit on one dataset and applied to
it (or, with --standardize_like, to another): each feature less its mean, over its standard deviation.

The statistics are learned over every item of the dataset, one field, per element of that field (a table's
field of k columns: k means and k deviations): the mean, and the population standard deviation (ddof=0,
as StandardScaler's), a deviation of 0 read as 1 (a constant feature becomes 0, not NaN), as
StandardScaler does. They are accumulated in float64 chunk by chunk (Chan's parallel update), so a big
dataset is never read whole, and applied in float64, rounded once to the field's dtype (a float field;
an integer one becomes float32).
"""
import torch

from torchsh.errors import TorchshError

CHUNK = 4096  # items read at a time while learning


def learn(dataset, field):
    """(mean, std) of field `field` over the dataset's items, as nested lists (float64 values)."""
    count, mean, m2 = 0, None, None
    for start in range(0, len(dataset), CHUNK):
        indices = list(range(start, min(start + CHUNK, len(dataset))))
        items = dataset.__getitems__(indices) if hasattr(dataset, "__getitems__") else [dataset[i] for i in indices]
        x = torch.stack([_field(item, field) for item in items]).to(torch.float64)
        chunk_mean = x.mean(0)
        chunk_m2 = ((x - chunk_mean) ** 2).sum(0)
        if mean is None:
            count, mean, m2 = x.shape[0], chunk_mean, chunk_m2
            continue
        total = count + x.shape[0]
        delta = chunk_mean - mean
        mean = mean + delta * (x.shape[0] / total)
        m2 = m2 + chunk_m2 + delta ** 2 * (count * x.shape[0] / total)
        count = total
    std = (m2 / count).sqrt()
    std[std == 0] = 1.0
    return mean.tolist(), std.tolist()


def standardize(t, mean, std, batch=False):
    """(t - mean) / std in float64, rounded once to t's dtype (float32 for an integer field). batch: t is a
    batch of items, item first (elementwise, so each item's values are those of the item alone)."""
    m = torch.tensor(mean, dtype=torch.float64, device=t.device)
    s = torch.tensor(std, dtype=torch.float64, device=t.device)
    item_shape = t.shape[1:] if batch else t.shape
    if m.shape != item_shape:
        raise TorchshError("shape_mismatch", "the statistics are of items of shape %s, this field's are %s"
                           % (list(m.shape), list(item_shape)), "standardize a dataset with the same features")
    out = (t.to(torch.float64) - m) / s
    return out.to(t.dtype if t.is_floating_point() else torch.float32)


def _field(item, field):
    return item[field] if isinstance(item, (tuple, list)) else item
