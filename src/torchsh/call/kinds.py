"""One reader per argument kind: how well a token fits (score) and what it becomes (convert).

score: 3 exact, 2 natural, 1 coerced (a number in a Tensor slot), 0 does not fit. Overload choice
sums scores, so `add $a 2` picks add.Scalar and `add $a $b` picks add.Tensor, as PyTorch does.
"""
import os
import re

import torch

from torchsh.errors import bad_argument, from_torch_exception
from torchsh.vocab import DTYPES, LAYOUTS, MEMORY_FORMATS, device_from_text

_DEVICE_RE = re.compile(r"^(cpu|cuda|mps|meta|xpu)(:\d+)?$")
_HANDLE_KINDS = {"tensor": "tensor", "module": "nn", "optimizer": "optim", "scheduler": "sched"}
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def score(kind, tok):
    cls = tok.cls
    if cls == "null":  # None fits optional args (bind() checks that); elsewhere only as text
        return 1 if kind in ("str", "path", "json") else 0
    if kind == "tensor":
        return {"handle": 3, "int": 1, "float": 1, "bool": 1, "list": 1, "stdin": 3}.get(cls, 0)
    if kind in ("module", "optimizer", "scheduler", "handle"):
        return 3 if cls in ("handle", "stdin") else 0
    if kind == "scalar":
        return {"int": 3, "float": 3, "bool": 2}.get(cls, 0)
    if kind == "int":
        return 3 if cls == "int" else 0
    if kind == "float":
        return 3 if cls in ("int", "float") else 0
    if kind == "bool":
        return 3 if cls == "bool" else (2 if cls == "int" and tok.value in (0, 1) else 0)
    if kind in ("int_list", "float_list", "bool_list"):
        if cls == "list":
            return 3
        if cls in ("int", "float") and kind != "bool_list":
            return 2 if kind == "float_list" or cls == "int" else 0
        return 2 if cls == "str" and "," in tok.value else 0
    if kind == "dtype":
        return 3 if cls == "str" and tok.value.replace("torch.", "") in DTYPES else 0
    if kind == "device":
        return 3 if cls == "str" and _DEVICE_RE.match(tok.value) else (1 if cls == "int" else 0)
    if kind == "layout":
        return 3 if cls == "str" and tok.value in LAYOUTS else 0
    if kind == "memory_format":
        return 3 if cls == "str" and tok.value in MEMORY_FORMATS else 0
    if kind == "str_list":
        return 3 if cls == "list" else (2 if cls == "str" else 0)
    if kind in ("str", "path"):
        return 3 if cls == "str" else 1
    if kind == "json":
        return 2
    if kind == "argv":
        return 3 if cls == "argv" else 0
    return 0


def convert(kind, tok, ctx):
    """Turn a token into the value the op receives. Raises TorchshError for bad handles or values."""
    if tok.cls == "null" and kind not in ("str", "path"):
        return None
    value = tok.value
    if kind == "tensor":
        if tok.cls in ("handle", "stdin"):
            return ctx.registry.get(value, "tensor")
        return tensor_from_json(check_int(value, tok.text) if tok.cls == "int" else value, tok.text)
    if kind in _HANDLE_KINDS:
        return ctx.registry.get(value, _HANDLE_KINDS[kind])
    if kind == "handle":
        ctx.registry.entry(value)  # validates: unknown, stale and malformed handles fail here
        return value.strip()
    if kind in ("int", "scalar") and tok.cls == "int":
        return check_int(value, tok.text)
    if kind == "float":
        return _float(value, tok.text)
    if kind == "bool":
        return bool(value)
    if kind in ("int_list", "float_list", "bool_list"):
        return _as_list(kind, tok)
    if kind == "dtype":
        return DTYPES[value.replace("torch.", "")]
    if kind == "device":
        return device_from_text("cuda:%d" % check_int(value, tok.text) if tok.cls == "int" else value)
    if kind == "layout":
        return LAYOUTS[value]
    if kind == "memory_format":
        return MEMORY_FORMATS[value]
    if kind == "str":
        return value if tok.cls == "str" else tok.text
    if kind == "str_list":
        return [str(x) for x in value] if tok.cls == "list" else [x for x in value.split(",") if x]
    if kind == "path":
        return os.path.normpath(os.path.join(ctx.cwd, os.path.expanduser(str(tok.text))))
    if kind == "json":
        if tok.cls in ("handle", "stdin"):
            return ctx.registry.get(value)
        return value
    return value


def check_int(value, text):
    """An integer PyTorch can take (int64), or bad_argument naming the range (not `Overflow when unpacking`)."""
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        shown = text if len(text) <= 40 else text[:20] + "…(%d characters)" % len(text)
        raise bad_argument("%s is out of range for a 64-bit integer" % shown,
                           "integers run from -2**63 to 2**63-1; write a float (1e23) where a float will do")
    return value


def _float(value, text):
    try:
        return float(value)
    except OverflowError:
        raise bad_argument("%s is out of range for a float" % text[:60], "floats reach about 1.8e308") from None


NONFINITE_STRINGS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"),
                     "nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def nonfinite_strings(data):
    """A JSON tensor literal with "NaN", "Infinity", "-Infinity" (what `torch value` prints) as floats.
    Any other string is no number: bad_argument, naming it."""
    if isinstance(data, list):
        return [nonfinite_strings(x) for x in data] if any(isinstance(x, (str, list)) for x in data) else data
    if isinstance(data, str):
        if data in NONFINITE_STRINGS:
            return NONFINITE_STRINGS[data]
        raise bad_argument("%r is not a number" % data[:60],
                           'numbers are JSON numbers; only "NaN", "Infinity" and "-Infinity" may be strings')
    return data


def tensor_from_json(value, text):
    """A number, boolean or nested list as a tensor; ragged, mixed or out-of-range data is a bad_argument."""
    try:
        return torch.tensor(nonfinite_strings(value))
    except (ValueError, TypeError, RuntimeError, OverflowError) as e:
        err = from_torch_exception(e)
        if err.code != "bad_argument":
            err = bad_argument("cannot make a tensor of %s: %s" % (text[:60], err.message))
        raise err from None


def _as_list(kind, tok):
    if tok.cls == "list":
        items = tok.value
    elif tok.cls == "str":
        try:
            items = [float(x) if kind == "float_list" else int(x) for x in tok.value.split(",") if x.strip()]
        except ValueError:
            raise bad_argument("cannot read %r as a list of numbers" % tok.text, "write it as JSON: '[1,2]'") from None
    else:  # a single int for int[]: PyTorch takes it as is (dim=1, size=5)
        return check_int(tok.value, tok.text) if tok.cls == "int" else tok.value
    want = {"int_list": int, "float_list": (int, float), "bool_list": bool}[kind]
    if not all(isinstance(x, want) and not (kind == "int_list" and isinstance(x, bool)) for x in items):
        raise bad_argument("%s holds values that are not %s" % (tok.text[:60], kind.replace("_list", "s")))
    if kind == "int_list":
        for x in items:
            check_int(x, str(x))
    return [_float(x, tok.text) for x in items] if kind == "float_list" else items
