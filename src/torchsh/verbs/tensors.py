"""Tensors in and out: tensor, value, shape, dtype, item, print (of any object), to, contiguous, index, index_put, manual_seed.

Floats print as the shortest text that reads back to the same value in the tensor's own dtype
(0.1 in float32 prints 0.1; text/tensortext.py); non-finite values as the JSON strings "NaN",
"Infinity", "-Infinity" (or bare with --nan bare), and `tensor` reads both forms back.
"""
import io
import json
import re

import numpy as np
import torch
from torch.nn.parameter import is_lazy

from torchsh.call.tokens import loads
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import csvfile
from torchsh.history import verbforms
from torchsh.plot.png import write_image
from torchsh.results import Binary, JsonText, LateJson, Text
from torchsh.table.spec import split_top_level
from torchsh.table.values import nonfinite_strings
from torchsh.text import tensortext
from torchsh.verbs import verb
from torchsh.vocab import DTYPES, dtype_name


@verb("tensor(Json data, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor",
      category="creation", form=verbforms.tensor,
      examples=("torch tensor '[[1,2],[3,4]]' --dtype float32",), read_only=True)
def tensor(ctx, data, dtype=None, device=None, requires_grad=False):
    """Make a tensor from JSON (argument or stdin): nested lists, or {dtype, shape, data} from `value --meta`."""
    if isinstance(data, str):
        try:
            data = loads(data)
        except ValueError as e:
            raise bad_argument("cannot read the data as JSON: %s" % e, "write it like '[[1,2],[3,4]]'") from None
    shape = None
    if isinstance(data, dict):
        if "data" not in data:
            raise bad_argument("a JSON object needs a 'data' field (the --meta form)")
        dtype = dtype or (DTYPES.get(data.get("dtype")) if data.get("dtype") else None)
        shape, data = data.get("shape"), data["data"]
    data = nonfinite_strings(data)
    device = device or (torch.device(ctx.device) if ctx.device else None)
    if dtype is not None and dtype.is_complex:
        t = torch.view_as_complex(torch.tensor(data, dtype=torch.float64).reshape(*(shape or []), 2)
                                  if shape is not None else torch.tensor(data, dtype=torch.float64)).to(dtype)
    elif dtype == torch.bfloat16 or (dtype is not None and dtype.is_floating_point and dtype.itemsize < 4):
        t = torch.tensor(data, dtype=torch.float64).to(dtype)  # parse in float64, round once
    else:
        t = torch.tensor(data, dtype=dtype)
    if shape is not None:
        t = t.reshape(shape)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        check_grad_dtype(t)
        t.requires_grad_(True)
    return t


def check_grad_dtype(t):
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise TorchshError("dtype_error", "only floating point and complex tensors can require gradients, this one is %s"
                           % dtype_name(t.dtype), "make it with --dtype float32")


@verb("value(Tensor input, *, bool meta=False, str format=\"json\", str nan=\"string\", OutPath? out=None) -> Json",
      category="tensors", lockfree=False,
      examples=("torch value $(torch arange 4)",
                "torch value $(torch eye 2) --meta",
                "torch value $(torch rand 3 8 8) --format png --out img.png"), read_only=True)
def value(ctx, input, meta=False, format="json", nan=None, out=None):
    """A snapshot of a tensor's data: compact JSON (default), csv or npy. JSON is valid JSON (RFC 8259):
    NaN and infinities are the strings "NaN", "Infinity", "-Infinity" (`torch tensor` reads them back);
    --nan bare prints Python's bare tokens NaN, Infinity, -Infinity instead. --format png --out FILE
    writes an H×W or C×H×W (C 1, 3, 4) uint8 tensor, or float in [0, 1], as an image (Pillow) and prints
    FILE; a PNG is never written to stdout."""
    if nan is not None and nan not in tensortext.NAN_MODES:
        raise bad_argument("--nan %s: use string (the default) or bare" % nan[:40])
    if is_lazy(input):
        raise TorchshError("torch_error", "a lazy module's uninitialized parameter has no data yet",
                           "run the module once (`torch forward MODEL INPUT`) first")
    if input.is_meta:
        raise TorchshError("device_error", "the tensor is on the meta device: it has a shape but no data",
                           "make it on a real device (--device cpu)")
    if (format == "png") != (out is not None):
        raise bad_argument("--out FILE goes with --format png" if out is not None else "--format png needs --out FILE",
                           "torch value T --format png --out image.png")
    if format == "png":
        write_image(out, input)
        return Text(out + "\n")
    if format == "json":
        # Copied under the tensor lock, formatted after it is released: other ops and the lock's queue
        # go on while millions of values become text.
        snap, head = tensortext.snapshot(input), None
        if meta:
            head = b'{"dtype":"%s","shape":%s,"data":' % (dtype_name(input.dtype).encode(),
                                                          json.dumps(list(input.shape)).replace(" ", "").encode())
        # --nan, else the JSON API's ?nan= (the mode render() gets), else strings
        return LateJson(lambda mode, start, end: _value_json(snap, head, nan or mode or "string", start, end))
    if format == "csv":
        return Text(csvfile.text(input))
    if format == "npy":
        buf = io.BytesIO()
        np.save(buf, _numpy(input), allow_pickle=False)
        return Binary(buf.getvalue())
    raise bad_argument("unknown format %r" % format, "use json, csv, npy or png")


def _value_json(snap, head, nan, start, end):
    """The reply's bytes, grown a piece at a time: one copy of the text, as b"".join makes, but the
    interpreter lock is free between pieces (one join of 175 MB holds it ~100 ms: every other request waits)."""
    pieces = tensortext.json_pieces(snap, nan)
    if head is not None:
        pieces = [head] + pieces + [b"}"]
    text = bytearray(start)
    for piece in pieces:
        text += piece
    text += end
    return text


def _numpy(t):
    t = t.detach().cpu().resolve_conj()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


def tensor_json(t, nan="string"):
    """Compact JSON text of a tensor's data, floats in their shortest round-trip form."""
    return tensortext.tensor_json(t, nan).decode()


def _float_texts(flat):
    return tensortext.float_texts(flat, bare=True)


@verb("shape(Tensor input) -> int[]",
      examples=("torch shape $(torch zeros 2 3)",), read_only=True)
def shape(ctx, input):
    """The tensor's shape as a JSON list."""
    return list(input.shape)


@verb("dtype(Tensor input) -> str",
      examples=("torch dtype $(torch arange 3)",), read_only=True)
def dtype(ctx, input):
    """The tensor's dtype name (float32, int64, …)."""
    return dtype_name(input.dtype)


@verb("item(Tensor input) -> Scalar",
      examples=("torch item $(torch sum $(torch ones 3))",), read_only=True)
def item(ctx, input):
    """The single value of a one-element tensor, as a JSON number (or true/false)."""
    if input.numel() != 1:
        raise TorchshError("shape_mismatch", "item needs a tensor with one element, got shape %s" % list(input.shape),
                           "reduce first with sum or mean, or use value")
    v = input.item()
    if isinstance(v, float) and input.dtype != torch.float64:
        return JsonText(_float_texts(input.reshape(1))[0])
    return v


@verb("print(Handle input) -> str",
      examples=("torch print $(torch eye 2)",), read_only=True)
def print_(ctx, input):
    """PyTorch's own display of any object: print(tensor), print(model), print(optimizer); a scheduler's state.

    A scheduler has no display of its own in PyTorch: it prints like an optimizer does, its class and
    its state_dict() entries (T_max, base_lrs, last_epoch, last_lr…) and the optimizer it drives.
    """
    obj = ctx.registry.get(input)
    if isinstance(obj, (torch.optim.lr_scheduler.LRScheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)):
        return Text(scheduler_text(obj) + "\n")
    return Text(str(obj) + "\n")


_SCHED_BOOKKEEPING = ("_step_count", "_is_initial", "_get_lr_called_within_step")


def scheduler_text(sched):
    """`CosineAnnealingLR (` then `    key: value` per state_dict entry, in the layout of Optimizer.__repr__."""
    lines = [type(sched).__name__ + " ("]
    for key, value in sorted(sched.state_dict().items(), key=lambda kv: kv[0].lstrip("_").lower()):
        if key in _SCHED_BOOKKEEPING:
            continue
        if key == "_schedulers":  # SequentialLR, ChainedScheduler: the schedulers by class
            value = "[%s]" % ", ".join(type(s).__name__ for s in sched._schedulers)
        lines.append("    %s: %s" % (key.lstrip("_"), value))
    lines.append("    optimizer: %s" % type(sched.optimizer).__name__)
    return "\n".join(lines + [")"])


@verb("to(Tensor input, *, ScalarType? dtype=None, Device? device=None, bool copy=False) -> Tensor",
      form=verbforms.to,
      examples=("torch value $(torch to $(torch arange 3) --dtype float64)",), read_only=True)
def to(ctx, input, dtype=None, device=None, copy=False):
    """Convert to another dtype and/or device."""
    if dtype is None and device is None:
        raise TorchshError("missing_argument", "to needs --dtype or --device", "usage: torch to TENSOR --dtype float64")
    return input.to(device=device, dtype=dtype, copy=copy)


@verb("contiguous(Tensor input) -> Tensor", category="shape", form=verbforms.method("contiguous", "input"),
      examples=("torch contiguous $(torch t $(torch zeros 2 3))",), read_only=True)
def contiguous(ctx, input):
    """A contiguous tensor with the same data (the input itself when already contiguous)."""
    return input.contiguous()


@verb("index(Tensor input, str index) -> Tensor", category="shape",
      no_form="Python indexing from a slice string is not written yet",
      examples=("torch value $(torch index $(torch arange 6) '1:4')",), read_only=True)
def index(ctx, input, index):
    """Python indexing with a slice string: torch index $t '[1:3, ::2, None, -1]' (handles index too)."""
    return input[parse_index(index, ctx)]


@verb("index_put(Tensor input, str index, Tensor values, *, bool accumulate=False) -> Tensor", category="shape",
      no_form="Python indexing from a slice string is not written yet",
      examples=("torch value $(torch index_put $(torch zeros 4) '1:3' $(torch ones 2))",), read_only=True)
def index_put(ctx, input, index, values, accumulate=False):
    """A copy of input with input[index] = values (or += with --accumulate). The input is not changed."""
    out = input.clone()
    key = parse_index(index, ctx)
    if accumulate:
        out[key] = out[key] + values
    else:
        out[key] = values
    return out


_SLICE_RE = re.compile(r"^(-?\d*)?:(-?\d*)?(?::(-?\d*))?$")


def parse_index(text, ctx):
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    parts = split_top_level(body)
    key = tuple(_index_part(p.strip(), ctx, text) for p in parts)
    return key[0] if len(key) == 1 else key


def _index_part(p, ctx, text):
    if p == "...":
        return Ellipsis
    if p in ("None", "none"):
        return None
    m = _SLICE_RE.match(p)
    if m:
        a, b, c = (int(x) if x else None for x in m.groups())
        return slice(a, b, c)
    if re.match(r"^-?\d+$", p):
        return int(p)
    if p.startswith("["):
        return torch.tensor(json.loads(p))
    if "://" in p:
        return ctx.registry.get(p, "tensor")
    raise bad_argument("cannot read %r in the index %r" % (p, text), "use ints, slices a:b:c, None, ..., lists or handles")


@verb("manual_seed(int seed) -> None", category="random", writes=("generator",), form=verbforms.manual_seed,
      examples=("torch manual_seed 0 && torch value $(torch randn 2)",))
def manual_seed(ctx, seed):
    """Seed PyTorch's global RNG: later draws equal Python's torch.manual_seed(N) then the same calls."""
    torch.manual_seed(seed)
    return None
