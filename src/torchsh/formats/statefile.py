"""State without pickle: nested Python state (state_dicts) <-> flat safetensors + JSON metadata.

A model's state_dict is already flat (name -> tensor) and goes to safetensors as is, so Python's
`model.load_state_dict(safetensors.torch.load_file(f))` reads it. Optimizer and scheduler state
dicts nest tensors inside dicts with int keys, tuples and floats; `encode` moves each tensor out to
a flat key and leaves a JSON skeleton that `decode` fills back in. Only plain data is accepted:
None, bool, int, float (NaN/Infinity included), str, list, tuple, dict and tensors. Anything
else is refused rather than pickled.
"""
import json

import torch

from torchsh.errors import TorchshError
from torchsh.formats.stfile import live

_TENSOR, _TUPLE, _DICT = "__tensor__", "__tuple__", "__dict__"


def encode(value, prefix, tensors):
    """JSON-able skeleton of value; tensors go into `tensors` under keys starting with prefix."""
    if isinstance(value, torch.Tensor):
        key = "%s.%d" % (prefix, len(tensors))
        tensors[key] = live(value)
        return {_TENSOR: key}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {_TUPLE: [encode(v, prefix, tensors) for v in value]}
    if isinstance(value, list):
        return [encode(v, prefix, tensors) for v in value]
    if isinstance(value, dict):
        return {_DICT: [[encode(k, prefix, tensors), encode(v, prefix, tensors)] for k, v in value.items()]}
    raise TorchshError("bad_argument", "cannot save a %s without pickle" % type(value).__name__,
                       "checkpoints hold tensors and plain values only")


def decode(value, tensors):
    """Inverse of encode."""
    if isinstance(value, list):
        return [decode(v, tensors) for v in value]
    if isinstance(value, dict):
        if _TENSOR in value:
            return tensors[value[_TENSOR]]
        if _TUPLE in value:
            return tuple(decode(v, tensors) for v in value[_TUPLE])
        return {decode(k, tensors): decode(v, tensors) for k, v in value[_DICT]}
    return value


def model_tensors(model, prefix=""):
    """The model's state_dict (parameters and buffers) as CPU tensors under PyTorch's key names: the live
    ones, for write() to save at once (no copy of every weight; write copies only tied ones)."""
    return {prefix + k: live(v) for k, v in model.state_dict().items()}


def check_fits(model, tensors, where="file"):
    """Strict check before any change: every key present, none extra, every shape equal. Raises, naming the key."""
    own = model.state_dict()
    missing = [k for k in own if k not in tensors]
    unexpected = [k for k in tensors if k not in own]
    if missing:
        raise TorchshError("state_mismatch", "missing key %s in the %s (%d missing)" % (missing[0], where, len(missing)),
                           "the %s was saved from another architecture" % where)
    if unexpected:
        raise TorchshError("state_mismatch", "unexpected key %s in the %s (%d unexpected)"
                           % (unexpected[0], where, len(unexpected)), "the %s was saved from another architecture" % where)
    for k, v in own.items():
        if tuple(v.shape) != tuple(tensors[k].shape):
            raise TorchshError("state_mismatch", "key %s has shape %s in the %s but %s in the model"
                               % (k, list(tensors[k].shape), where, list(v.shape)), "the layer sizes differ")


def load_model(model, tensors, where="file"):
    """Strict and atomic: check everything first, then let PyTorch copy (parameters stay the same objects)."""
    check_fits(model, tensors, where)
    model.load_state_dict(tensors, strict=True)
