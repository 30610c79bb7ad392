"""One reader per argument kind: how well a token fits (score) and what it becomes (convert).

score: 3 exact, 2 natural, 1 coerced (a number in a Tensor slot), 0 does not fit. Overload choice
sums scores, so `add $a 2` picks add.Scalar and `add $a $b` picks add.Tensor, as PyTorch does.
"""
import os
import re

import torch

from torchsh.errors import bad_argument

DTYPES = {
    "float32": torch.float32, "float": torch.float32, "float64": torch.float64, "double": torch.float64,
    "float16": torch.float16, "half": torch.float16, "bfloat16": torch.bfloat16,
    "int8": torch.int8, "int16": torch.int16, "short": torch.int16, "int32": torch.int32, "int": torch.int32,
    "int64": torch.int64, "long": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
    "complex64": torch.complex64, "cfloat": torch.complex64, "complex128": torch.complex128,
    "cdouble": torch.complex128, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64,
    "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2,
}
DTYPE_NAMES = {v: k for k, v in reversed(list(DTYPES.items()))}  # canonical name per dtype
LAYOUTS = {"strided": torch.strided, "sparse_coo": torch.sparse_coo}
MEMORY_FORMATS = {"contiguous_format": torch.contiguous_format, "channels_last": torch.channels_last,
                  "preserve_format": torch.preserve_format, "channels_last_3d": torch.channels_last_3d}
_DEVICE_RE = re.compile(r"^(cpu|cuda|mps|meta|xpu)(:\d+)?$")
_HANDLE_KINDS = {"tensor": "tensor", "module": "nn", "optimizer": "optim", "scheduler": "sched"}


def dtype_name(dtype):
    return DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


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
        return torch.tensor(value)
    if kind in _HANDLE_KINDS:
        return ctx.registry.get(value, _HANDLE_KINDS[kind])
    if kind == "handle":
        ctx.registry.entry(value)  # validates: unknown, stale and malformed handles fail here
        return value.strip()
    if kind == "float":
        return float(value)
    if kind == "bool":
        return bool(value)
    if kind in ("int_list", "float_list", "bool_list"):
        return _as_list(kind, tok)
    if kind == "dtype":
        return DTYPES[value.replace("torch.", "")]
    if kind == "device":
        return torch.device("cuda:%d" % value if tok.cls == "int" else value)
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


def _as_list(kind, tok):
    if tok.cls == "list":
        items = tok.value
    elif tok.cls == "str":
        try:
            items = [float(x) if kind == "float_list" else int(x) for x in tok.value.split(",") if x.strip()]
        except ValueError:
            raise bad_argument("cannot read %r as a list of numbers" % tok.text, "write it as JSON: '[1,2]'") from None
    else:
        return tok.value  # a single int for int[]: PyTorch takes it as is (dim=1, size=5)
    want = {"int_list": int, "float_list": (int, float), "bool_list": bool}[kind]
    if not all(isinstance(x, want) and not (kind == "int_list" and isinstance(x, bool)) for x in items):
        raise bad_argument("%s holds values that are not %s" % (tok.text, kind.replace("_list", "s")))
    return [float(x) for x in items] if kind == "float_list" else items
