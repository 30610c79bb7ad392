"""How many bytes an op's output will take, before it runs: bounds from the inputs and the numeric
arguments, shape inference on the meta device, formulas for the ops whose size is in their data, and
the verbs that can allocate far more than their inputs (`load`, `value`). budget.py decides; modules.py
sizes modules and optimizers' state.
"""
import itertools
import math

from torchsh.memory.files import files_read_whole

_TEXT_BYTES_PER_ELEMENT = 256  # `torch print`, `value --format csv` at their peak: numpy <U32, str objects, a list
_JSON_BYTES_PER_ELEMENT = 64   # `torch value` as JSON (text/tensortext.py): a snapshot and ~2 copies of the text;
                               # 16M float32 measured at 26 bytes a value over the daemon's peak RSS


class Exact(int):
    """A size known without a meta run (measured on the data, a formula, a file's size)."""


# -- bounds ------------------------------------------------------------------------------------------
_torch = None
_rules = {}   # id(overload) -> (rule, overload): kept alive so ids stay unique


def _t():
    global _torch
    if _torch is None:
        import torch
        _torch = torch
    return _torch


def bound(op, overload, args, kwargs):
    """(an upper bound in bytes of what the op allocates, or None if unknown; the CUDA device or None)."""
    torch = _t()
    Tensor = torch.Tensor
    entry = _rules.get(id(overload))
    if entry is None:
        entry = _rules[id(overload)] = (_rule(op, overload), _numeric_defaults(overload, op.factory), overload)
    rule, defaults, _ = entry
    tensors, numbers, factory = [], 0.0, op.factory
    for v in itertools.chain(args, kwargs.values()):  # one pass: the tensors, and the numbers' sum
        if isinstance(v, Tensor):
            tensors.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, Tensor):
                    tensors.append(x)
                else:
                    numbers += _numeric(x, factory)
        else:
            numbers += _numeric(v, factory)
    cuda = None
    for t in tensors:
        if t.is_cuda:
            cuda = t.device
            break
    if factory and kwargs.get("device") is not None:
        dev = torch.device(kwargs["device"])
        cuda = dev if dev.type == "cuda" else None
    if rule == "pointwise":  # the broadcast of the inputs; at most two outputs of 16 bytes an element
        if not tensors:
            return None, cuda
        first = tensors[0].shape
        numel = tensors[0].numel()
        for t in tensors:
            if t.shape != first:
                numel = _broadcast_numel([t.shape for t in tensors])
                break
        return 32 * numel, cuda
    if rule == "reduction":
        return 32 * sum(t.numel() for t in tensors), cuda
    if rule == "view":  # a view allocates nothing; a copying reshape/contiguous at most the input
        return 16 * sum(t.numel() for t in tensors), cuda
    if rule in _DATA_DEPENDENT:
        size = _DATA_DEPENDENT[rule](overload, args, kwargs)
        return (None if size is None else Exact(size)), cuda
    for name, value in defaults:  # combinations' r=2: a default counts unless a flag replaced it
        if name not in kwargs:
            numbers += value
    return _generic_bound(sum(t.numel() for t in tensors), len(tensors), numbers), cuda


def _broadcast_numel(shapes):
    """The element count of the shapes broadcast together (at least that, if they do not broadcast)."""
    ndim = max(len(s) for s in shapes)
    numel = 1
    for d in range(1, ndim + 1):
        numel *= max(s[-d] if d <= len(s) else 1 for s in shapes)
    return numel


def _rule(op, overload):
    """How to bound this overload's output, decided once from its ATen tags and return annotations."""
    if op.factory:
        return "generic"
    torch = _t()
    name = getattr(op.call, "__name__", None)
    packet = getattr(torch.ops.aten, name, None) if name and overload.returns and not _is_python(op.call) else None
    tags = ()
    if packet is not None:
        try:
            tags = getattr(packet, overload.name or "default").tags
        except (AttributeError, RuntimeError):
            tags = ()
    if name in _DATA_DEPENDENT and not _is_python(op.call):
        return name
    if torch.Tag.dynamic_output_shape in tags or torch.Tag.data_dependent_output in tags:
        return "generic"  # nonzero, unique…: bounded by their input; meta cannot run them (we try, then run)
    if torch.Tag.pointwise in tags:
        return "pointwise"
    if torch.Tag.reduction in tags:
        return "reduction"
    returns = [r for r in overload.returns.strip("()").split(",") if r.strip()]
    if returns and all("(a" in r and "!" not in r for r in returns):
        return "view"
    return "generic"


def _is_python(fn):
    import inspect
    return inspect.isfunction(fn)


def _numeric(v, factory):
    """How much a numeric argument can multiply an output's size by. Sizes, repeats and counts are
    positive (a negative number is a dim, an index from the end, ignore_index=-100); a factory's
    numbers are endpoints and steps: arange(-1e9, 0) and arange(0, 1, 1e-9) are big."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0.0
    if isinstance(v, int) and abs(v) > 1 << 60:
        return math.inf
    if not factory:
        return max(float(v), 0.0)
    a = abs(float(v))
    return 1.0 / a if 0 < a < 1 else a


def _generic_bound(n, tensors, numbers):
    """A bound for any op: 64 * (n + S + 2) ** (T + S + 1) bytes, where n is the inputs' element count,
    T the number of tensor inputs and S the sum of the numeric arguments' sizes (defaults included).

    It covers outer products and broadcasting (n ** T), sizes and repeats given as numbers (repeat,
    one_hot, pad, fft's n: a factor under n + S), and numbers used as exponents (combinations' r). It is
    far too big for large inputs; then the meta run (exact) decides, and only then.
    """
    if numbers > 1e15:
        return math.inf
    log_bytes = math.log(64) + (tensors + numbers + 1) * math.log(n + numbers + 2)
    return math.inf if log_bytes > 60 else math.exp(log_bytes)


def _numeric_defaults(overload, factory):
    """[(name, size)] of the overload's numeric defaults that could count (computed once per overload)."""
    out = []
    for a in overload.args:
        value = _numeric_any(a.default, factory)
        if value:
            out.append((a.name, value))
    return out


def _numeric_any(v, factory):
    if isinstance(v, (list, tuple)):
        return sum(_numeric(x, factory) for x in v)
    return _numeric(v, factory)


# -- verbs ---------------------------------------------------------------------------------------------
def verb_bound(op, ctx, values):
    torch = _t()
    x = values.get("input")
    if op.name == "contiguous" and isinstance(x, torch.Tensor) and not x.is_cuda:
        return Exact(0 if x.is_contiguous() else x.numel() * x.element_size())
    if op.name == "to" and isinstance(x, torch.Tensor) and not x.is_cuda:
        device, dtype = values.get("device"), values.get("dtype")
        if device is not None and torch.device(device).type != "cpu":
            return None  # another device's memory; CUDA OOM is caught
        item = torch.empty((), dtype=dtype).element_size() if dtype is not None else x.element_size()
        return Exact(x.numel() * item)
    if op.name in ("value", "print") and isinstance(x, torch.Tensor):  # text: numpy strings, then Python's
        per = {"npy": 2 * x.element_size(), "csv": _TEXT_BYTES_PER_ELEMENT}.get(
            values.get("format"), _JSON_BYTES_PER_ELEMENT if op.name == "value" else _TEXT_BYTES_PER_ELEMENT)
        return Exact(x.numel() * per * (2 if x.is_complex() and values.get("format") != "npy" else 1))
    if op.name in ("load", "data.open"):
        size = files_read_whole(op.name, values)
        return None if size is None else Exact(size)
    return None  # layers and optimizers admit themselves as they are built (memory/modules.py)


def warnings_off():
    import warnings

    class _Off(warnings.catch_warnings):
        def __enter__(self):
            super().__enter__()
            warnings.simplefilter("ignore")
    return _Off()


# -- the data-dependent few: their size is in their input's values ---------------------------------
def _bincount(overload, args, kwargs):
    x = args[0] if args else kwargs.get("input")
    weights = args[1] if len(args) > 1 else kwargs.get("weights")
    minlength = args[2] if len(args) > 2 else kwargs.get("minlength", 0)
    if x is None or x.is_floating_point() or x.dim() != 1:
        return None
    top = int(x.max()) + 1 if x.numel() else 0
    item = weights.element_size() if weights is not None else 8
    return max(top, int(minlength or 0)) * max(item, 8)


def _one_hot(overload, args, kwargs):
    x = args[0] if args else kwargs.get("input")
    classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
    if x is None or x.is_floating_point():
        return None
    if classes is None or classes < 0:
        classes = int(x.max()) + 1 if x.numel() else 0
    return x.numel() * int(classes) * 8


def _repeat_interleave(overload, args, kwargs):
    torch = _t()
    params = [a.name for a in overload.args]
    values = dict(zip(params, args), **kwargs)
    repeats, x = values.get("repeats"), values.get("input")
    if not isinstance(repeats, torch.Tensor) or repeats.is_floating_point():
        return None
    if isinstance(x, torch.Tensor) and x is not repeats:
        dim = values.get("dim")
        along = x.numel() if dim is None else x.shape[dim]
        inner = x.numel() // along if along else 0
        total = int(repeats.sum()) if repeats.numel() != 1 else int(repeats.reshape(())) * along
        return max(total, 0) * inner * x.element_size()
    return max(int(repeats.sum()), 0) * 8 if repeats.numel() else 0


def _combinations(overload, args, kwargs):
    """combinations builds an n ** r grid of indices and a mask before it selects (masked_select: no meta)."""
    params = [a.name for a in overload.args]
    values = dict(zip(params, args), **kwargs)
    x, r = values.get("input"), values.get("r", 2)
    if x is None or not isinstance(r, int) or r < 0 or x.dim() != 1:
        return None
    n = x.numel()
    return n ** r * (r + 1) * max(x.element_size(), 8) if n and r else 0


# ATen ops whose output size meta cannot infer, with the size from their data (or a formula)
_DATA_DEPENDENT = {"bincount": _bincount, "one_hot": _one_hot, "repeat_interleave": _repeat_interleave,
                   "combinations": _combinations}


def exact_bytes(op, overload, args, kwargs):
    """What the op allocates, from running it on meta copies of its inputs; None when meta cannot tell.

    Outputs that share storage with an input (views) count as nothing; each new storage counts once.
    """
    torch = _t()
    inputs = set()

    def meta(v):
        if isinstance(v, torch.Tensor):
            m = torch.empty_strided(v.size(), v.stride(), dtype=v.dtype, device="meta")
            inputs.add(m.untyped_storage()._cdata)
            return m
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
            return type(v)(meta(x) for x in v)
        return v

    try:
        margs = [meta(a) for a in args]
        mkwargs = {k: meta(v) for k, v in kwargs.items()}
        if op.factory:
            mkwargs["device"] = "meta"
        with torch.no_grad(), warnings_off():
            out = op.call(*margs, **mkwargs)
    except Exception:  # no meta kernel, data-dependent, or the op's own error (the real run reports it)
        return None
    seen, total = set(), 0
    for t in _tensors_in(out, torch.Tensor):
        if not t.is_meta:
            return None  # a Python op that made a real tensor: it has allocated already, nothing to learn
        key = t.untyped_storage()._cdata
        if key in inputs or key in seen:
            continue
        seen.add(key)
        total += t.untyped_storage().nbytes()
    return total


def _tensors_in(value, Tensor):
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v, Tensor)
