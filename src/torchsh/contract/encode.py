"""Inputs on their way into a model: checked against its card, then preprocessed as the model was trained.

One rule for every verb that feeds a model (fit's --val, predict, sweep trials, serve, export's baked graph):
- the fields: as many input fields as the card's, each item of the card's shape and dtype; a table's columns by
  name, in the card's order (a missing, extra or reordered column is refused with the --columns or --target
  that fixes it: a column in the wrong place would be scored silently as another);
- one-hot categories: the same categories, in the same order, per column;
- preprocessing: raw inputs are standardized with the statistics the model was trained under; data already
  standardized with those same statistics passes as it is; data standardized with other statistics (its own,
  learned on a split) is refused, since the model would see other numbers than in training.
`forward` is PyTorch's raw call and reads no card.
"""
import torch

from torchsh.contract import card as cards
from torchsh.data import transforms
from torchsh.data.datasets import known
from torchsh.data.standardize import standardize
from torchsh.errors import TorchshError
from torchsh.vocab import dtype_name


KINDS = ("standardize",)  # the preprocessing rows this version applies (models/preprocessed.py bakes the same)


def dataset(card, data, where=None):
    """DATA as the model takes it: checked (refused with the fix) and preprocessed by CARD. where: what the data
    is to the command, for its messages ("--val"), or None for the command's own data."""
    check(card, data, where)
    stats = cards.standardization(card)
    if not stats or not len(data):
        return data
    have = known(data, "standardization")
    if have:
        if not _same(have, stats):
            raise TorchshError("state_mismatch", "%sthe data is standardized with statistics of its own, and the "
                               "model was trained under others" % _prefix(where),
                               "give the raw rows (the model standardizes them as in training), or transform with "
                               "`torch data transform D --standardize_like TRAIN`")
        return data
    step = transforms.Step("standardize", stats["field"], (stats["mean"], stats["std"]))
    return transforms.TransformedDataset(data, [step])


def batch(card, fields):
    """A batch of input fields (item first) preprocessed by CARD: serve's requests, predict's tensors."""
    _known_kinds(card)
    stats = cards.standardization(card)
    if not stats or stats["field"] >= len(fields):
        return list(fields)
    fields = list(fields)
    fields[stats["field"]] = standardize(fields[stats["field"]], stats["mean"], stats["std"], batch=True)
    return fields


def _prefix(where):
    return "%s: " % where if where else ""


def check(card, data, where=None):
    """Refuse DATA whose items do not fit CARD's inputs: their count, columns, categories, shapes, dtypes."""
    prefix = _prefix(where)
    _known_kinds(card)
    inputs = card.get("inputs")
    if not inputs or not len(data):
        return
    item = data[0] if isinstance(data[0], (tuple, list)) else (data[0],)
    if len(item) not in (len(inputs), len(inputs) + 1):
        raise TorchshError("shape_mismatch", "%sthe model takes %d input field(s), and these items have %d"
                           % (prefix, len(inputs), len(item)), "open the data with the fields it was trained on "
                           "(inputs…, then the target)")
    columns = known(data, "field_columns") or []
    for k, want in enumerate(inputs):
        _check_columns(prefix, want, columns[k] if k < len(columns) else None, card)
        _check_item(prefix, k, want, item[k])
    _check_categories(prefix, card, known(data, "categories") or {})


def _check_columns(prefix, want, given, card):
    wanted = want.get("columns")
    if not wanted or not given or list(given) == list(wanted):
        return
    target = (card.get("target") or {}).get("name")
    if list(given) == list(wanted) + [target] or (target in given and sorted(given) == sorted(wanted + [target])):
        raise TorchshError("shape_mismatch", "%sthe data's columns hold the target %r as an input" % (prefix, target),
                           "open it with --target %s" % target)
    missing = [c for c in wanted if c not in given]
    if missing:
        raise TorchshError("shape_mismatch", "%sthe model was trained on %d columns; the data lacks %s"
                           % (prefix, len(wanted), ",".join(missing)), "open a table that has them")
    extra = [c for c in given if c not in wanted]
    at = next((k for k, (a, b) in enumerate(zip(given, wanted)) if a != b), min(len(given), len(wanted)))
    found = "%r" % given[at] if at < len(given) else "nothing"
    raise TorchshError("shape_mismatch", "%sthe data's column %d is %s where the model was trained on %r (its %d "
                       "columns, in order)" % (prefix, at, found, wanted[at] if at < len(wanted) else None, len(wanted)),
                       "open it with --columns %s%s" % (",".join(wanted), " (leaving out %s)" % ",".join(extra)
                                                         if extra else ""))


def _check_item(prefix, k, want, value):
    if not isinstance(value, torch.Tensor):
        return
    shape = want.get("shape")
    if shape is not None and list(value.shape) != list(shape):
        raise TorchshError("shape_mismatch", "%sinput field %d (%s) has items of shape %s, and the model was "
                           "trained on %s" % (prefix, k, want.get("name"), list(value.shape), list(shape)),
                           "give items with the features it was trained on, in the same order")
    dtype = want.get("dtype")
    if dtype and value.is_floating_point() != dtype.startswith(("float", "bfloat")):
        raise TorchshError("dtype_error", "%sinput field %d is %s, and the model was trained on %s"
                           % (prefix, k, dtype_name(value.dtype), dtype), "open the data with --dtype %s" % dtype)


def _check_categories(prefix, card, given):
    trained = card.get("categories") or {}
    for column in sorted(set(trained) & set(given)):
        if list(trained[column]) != list(given[column]):
            raise TorchshError("state_mismatch", "%scolumn %r is one-hot encoded over %s here, and the model was "
                               "trained on %s" % (prefix, column, list(given[column]), list(trained[column])),
                               "every category must appear in the data for the same columns; open these rows "
                               "together with the training data")


def _known_kinds(card):
    unknown = [p["kind"] for p in card.get("preprocessing", ()) if p.get("kind") not in KINDS]
    if unknown:
        raise TorchshError("not_supported", "the model was trained on inputs preprocessed by %s, which this "
                           "version of torchsh does not apply" % ", ".join(unknown),
                           "use the torchsh that trained it, or preprocess the rows yourself and use `torch forward`")


def _same(a, b):
    return a.get("field") == b.get("field") and _floats(a.get("mean")) == _floats(b.get("mean")) \
        and _floats(a.get("std")) == _floats(b.get("std"))


def _floats(v):
    return [_floats(x) for x in v] if isinstance(v, (list, tuple)) else float(v)
