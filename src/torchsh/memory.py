"""The memory budget: refuse an op whose output would not fit, before it allocates.

Without it an op such as `torch zeros '[30000,30000]'` (3.6 GB) in a 2 GiB container gets the daemon
OOM-killed and every object it holds is lost; with it the op is refused with `out_of_memory` and the
daemon lives. The budget is TORCHSH_MAX_MEMORY / `torchd --max-memory` (512M, 2G, 2GiB, 50%, none),
by default half of the machine's memory: min(physical RAM, the cgroup's limit).

"Memory in use" is the daemon's resident set (RSS), not the bytes behind handles: RSS is what the
kernel's OOM killer counts, and it includes what handles do not (PyTorch itself, autograd graphs,
allocator caches). An op is admitted when RSS + its output fits the budget.

Sizes come from, cheapest first:
- a bound computed from the inputs' sizes and the numeric arguments (a few µs; the op's ATen tags say
  when the output is no bigger than a broadcast of the inputs, a reduction of them, or a view);
- when that bound does not fit, the op itself run on meta copies of its inputs (shape inference; no
  data is touched, no RNG advanced); views of the inputs count as nothing;
- for the few ops whose output size depends on the data (bincount, one_hot, repeat_interleave), the
  data, and a formula for combinations (no meta kernel; it builds an n ** r grid first);
- for verbs: layers built on the meta device, `load` by the file's size, `contiguous`/`to`/`value` by
  shape;
- otherwise the op runs, and an allocation failure (MemoryError, PyTorch's allocator error, CUDA OOM)
  becomes `out_of_memory` too (see allocation_failure).
For CUDA outputs the budget is the device's free memory (torch.cuda.mem_get_info plus what PyTorch's
caching allocator holds unused); TORCHSH_MAX_MEMORY is about host memory.
"""
import itertools
import logging
import math
import os
import re
import stat

from torchsh.errors import TorchshError

log = logging.getLogger("torchd")

ENV = "TORCHSH_MAX_MEMORY"
DEFAULT = "50%"   # of min(RAM, cgroup limit): room left for temporaries, the rest of the machine, the shell
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b)?\s*$", re.I)
_UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as 0x7ffffffffffff000
_CUDA_SMALL = 64 << 20  # a CUDA output under this is not checked: a CUDA OOM is catchable anyway
_TEXT_BYTES_PER_ELEMENT = 256  # `torch value` at its peak: a numpy <U32 array, str objects, a list, the JSON


def parse_size(text, total=None):
    """'512M', '2G', '2GiB', '1.5g', '1048576', '50%' (of total), 'none' -> bytes, or None for no limit.

    K, M, G, T (with or without `iB`/`B`) are powers of 1024, as in Docker and systemd.
    """
    word = str(text).strip().lower()
    if word in ("none", "off", "unlimited", "max"):
        return None
    if word.endswith("%"):
        try:
            pct = float(word[:-1])
        except ValueError:
            pct = -1
        if not 0 < pct <= 100:
            raise ValueError("memory budget %r: a percentage must be over 0 and at most 100" % text)
        return int(total * pct / 100)
    m = _SIZE_RE.match(word)
    if not m or (m.group(3) and m.group(3) != "b" and not m.group(2)):
        raise ValueError("memory budget %r is not a size: use 512M, 2G, 2GiB, 50%% or none" % text)
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n <= 0:
        raise ValueError("memory budget %r must be positive (none turns the budget off)" % text)
    return n


def human(n):
    """1536 -> '1.5 KiB'; the one size format of budget messages and `daemon status`."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024


# -- how much memory the machine gives us ---------------------------------------------------------
def physical_memory():
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def cgroup_limit(proc_cgroup="/proc/self/cgroup", mountinfo="/proc/self/mountinfo"):
    """The tightest memory limit over our cgroup and its ancestors (v2 memory.max, v1
    memory.limit_in_bytes), or None. Containers and systemd units set these; the OOM killer enforces them."""
    try:
        with open(proc_cgroup) as f:
            lines = f.read().splitlines()
        mounts = _cgroup_mounts(mountinfo)
    except OSError:
        return None
    limits = []
    for line in lines:
        hid, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hid == "0" and controllers == "":
            mount, fname = mounts.get("cgroup2"), "memory.max"
        elif "memory" in controllers.split(","):
            mount, fname = mounts.get("memory"), "memory.limit_in_bytes"
        else:
            continue
        if mount is not None:
            limits += _limits_up_from(mount, path, fname)
    return min(limits) if limits else None


def _cgroup_mounts(mountinfo):
    """{'cgroup2': (root, mount point), 'memory': (root, mount point)} from /proc/self/mountinfo."""
    out = {}
    with open(mountinfo) as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) < 5 or len(tail) < 3:
                continue
            root, point = fields[3], fields[4]
            if tail[0] == "cgroup2":
                out.setdefault("cgroup2", (root, point))
            elif tail[0] == "cgroup" and "memory" in tail[2].split(","):
                out.setdefault("memory", (root, point))
    return out


def _limits_up_from(mount, path, fname):
    root, point = mount
    rel = path[len(root):] if root != "/" and path.startswith(root) else path
    folder = os.path.normpath(point + "/" + rel.lstrip("/"))
    if not folder.startswith(point):
        return []
    out = []
    while True:
        try:
            with open(os.path.join(folder, fname)) as f:
                text = f.read().strip()
            if text != "max" and 0 < int(text) < _UNLIMITED:
                out.append(int(text))
        except (OSError, ValueError):
            pass
        if folder == point or len(folder) <= len(point):
            return out
        folder = os.path.dirname(folder)


def machine_memory():
    """(bytes, words): min(physical RAM, cgroup limit), and which one it was."""
    ram, cg = physical_memory(), cgroup_limit()
    if cg is not None and cg < ram:
        return cg, "the cgroup limit %s" % human(cg)
    return ram, "RAM %s" % human(ram)


class _RssReader:
    """RSS from /proc/self/statm through a descriptor kept open: one pread, about 1 µs."""

    def __init__(self):
        self.page = os.sysconf("SC_PAGE_SIZE")
        try:
            self.fd = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:
            self.fd = None

    def __call__(self):
        if self.fd is not None:
            try:
                return int(os.pread(self.fd, 128, 0).split()[1]) * self.page
            except (OSError, ValueError, IndexError):
                pass
        import resource  # no /proc: peak RSS, an over-estimate
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


rss_bytes = _RssReader()


def _malloc_trim():
    """Give freed heap pages back to the kernel, so RSS says what is really in use (glibc only)."""
    try:
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


# -- the budget -------------------------------------------------------------------------------------
class Budget:
    """The daemon's memory budget. admit() runs under the tensor lock, before every ATen op."""

    def __init__(self, limit, rule):
        self.limit = limit      # bytes, or None: no host budget (allocation failures are still caught)
        self.rule = rule        # how it was set, in words, for status and messages
        self.refused = 0        # ops refused so far, for status

    @classmethod
    def from_setting(cls, text=None):
        """text: TORCHSH_MAX_MEMORY's value or --max-memory's; None -> the default. Raises ValueError."""
        total, words = machine_memory()
        if text is None or not str(text).strip():
            return cls(parse_size(DEFAULT, total), "%s of %s (default)" % (DEFAULT, words))
        limit = parse_size(text, total)
        if limit is None:
            return cls(None, "none (%s=none)" % ENV)
        rule = "%s of %s" % (text.strip(), words) if str(text).strip().endswith("%") else str(text).strip()
        return cls(limit, rule)

    @classmethod
    def from_env(cls, environ=os.environ):
        try:
            return cls.from_setting(environ.get(ENV))
        except ValueError as e:
            log.warning("%s; using the default budget", e)
            return cls.from_setting(None)

    def admit(self, op, overload, args, kwargs):
        """Raise out_of_memory if the op's output would not fit; otherwise return (fast when it surely fits).

        RSS is read fresh every time (one pread, ~1 µs): no window in which admitted ops pile up unseen.
        """
        try:
            bound, cuda = _bound(op, overload, args, kwargs)
        except Exception:  # a bug here must never break an op: let it run, log why
            log.exception("memory bound of %s failed; admitting it", op.name)
            return
        if cuda is not None:
            return self._admit_cuda(op, overload, args, kwargs, bound, cuda)
        if self.limit is None or bound is None or rss_bytes() + bound <= self.limit:
            return
        size = bound if isinstance(bound, _Exact) else exact_bytes(op, overload, args, kwargs)
        self._admit_size(size)

    def admit_verb(self, op, ctx, values):
        """The verbs that can allocate far more than their inputs hold: a layer (`nn linear 100000 100000`
        is 40 GB of weights), `contiguous` and `to` of an expanded view, `load` of a big file, `value`
        and `print` (text costs ~256 bytes an element at its peak). Other verbs are not checked (their
        allocation failures still are)."""
        try:
            bound = _verb_bound(op, ctx, values)
        except Exception:
            log.exception("memory bound of %s failed; admitting it", op.name)
            return
        if self.limit is None or bound is None or rss_bytes() + bound <= self.limit:
            return
        self._admit_size(bound if isinstance(bound, _Exact) else _layer_bytes(op, ctx, values))

    def _admit_size(self, size):
        if size is None:
            return  # cannot tell: run it; an allocation failure is caught as out_of_memory
        rss = rss_bytes()
        if rss + size > self.limit:
            _malloc_trim()  # freed tensors may still count in RSS; only now is the cost worth it
            rss = rss_bytes()
        if rss + size > self.limit:
            self.refused += 1
            raise over_budget(int(size), rss, self.limit, self.rule)

    def _admit_cuda(self, op, overload, args, kwargs, bound, device):
        if bound is not None and bound < _CUDA_SMALL:
            return
        size = bound if isinstance(bound, _Exact) else exact_bytes(op, overload, args, kwargs)
        if size is None:
            return
        import torch
        free, total = torch.cuda.mem_get_info(device)
        reusable = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        if size > free + reusable:
            self.refused += 1
            raise TorchshError(
                "out_of_memory", "output of %s does not fit in %s: %s free of %s"
                % (human(size), device, human(free + reusable), human(total)),
                "`torch tensors` lists what is held and `torch free HANDLE…` releases it")


class _Exact(int):
    """A size known without a meta run (measured on the data, a formula, a file's size)."""


def over_budget(size, rss, limit, rule):
    return TorchshError(
        "out_of_memory", "output of %s would exceed the memory budget of %s (%s in use)"
        % (human(size), human(limit), human(rss)),
        "`torch tensors` lists what is held and `torch free HANDLE…` releases it; the budget is %s "
        "(set %s or torchd --max-memory)" % (rule, ENV))


# -- allocation failures ----------------------------------------------------------------------------
_ALLOC_RE = re.compile(r"(?:can't allocate memory|not enough memory|out of memory)", re.I)
_BYTES_RE = re.compile(r"tried to allocate (\d+) bytes", re.I)
_CUDA_SIZE_RE = re.compile(r"tried to allocate ([\d.]+ [KMGT]?i?B)", re.I)


def allocation_failure(exc):
    """The out_of_memory error for an exception that says an allocation failed, else None.

    PyTorch's CPU allocator raises RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to
    allocate N bytes…"), CUDA raises torch.OutOfMemoryError, Python raises MemoryError.
    """
    if isinstance(exc, MemoryError):
        text = "out of memory"
    elif isinstance(exc, RuntimeError) and (_ALLOC_RE.search(str(exc)) or type(exc).__name__ == "OutOfMemoryError"):
        text = str(exc)
    else:
        return None
    m, mc = _BYTES_RE.search(text), _CUDA_SIZE_RE.search(text)
    what = human(int(m.group(1))) if m else mc.group(1) if mc else "the output"
    return TorchshError("out_of_memory", "could not allocate %s: out of memory" % what,
                        "`torch tensors` lists what is held and `torch free HANDLE…` releases it")


# -- sizes ------------------------------------------------------------------------------------------
_torch = None
_rules = {}   # id(overload) -> (rule, overload): kept alive so ids stay unique


def _t():
    global _torch
    if _torch is None:
        import torch
        _torch = torch
    return _torch


def _bound(op, overload, args, kwargs):
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
        return (None if size is None else _Exact(size)), cuda
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
def _verb_bound(op, ctx, values):
    torch = _t()
    x = values.get("input")
    if op.name == "contiguous" and isinstance(x, torch.Tensor) and not x.is_cuda:
        return _Exact(0 if x.is_contiguous() else x.numel() * x.element_size())
    if op.name == "to" and isinstance(x, torch.Tensor) and not x.is_cuda:
        device, dtype = values.get("device"), values.get("dtype")
        if device is not None and torch.device(device).type != "cpu":
            return None  # another device's memory; CUDA OOM is caught
        item = torch.empty((), dtype=dtype).element_size() if dtype is not None else x.element_size()
        return _Exact(x.numel() * item)
    if op.name in ("value", "print") and isinstance(x, torch.Tensor):  # text: numpy strings, then Python's
        per = 2 * x.element_size() if values.get("format") == "npy" else _TEXT_BYTES_PER_ELEMENT
        return _Exact(x.numel() * per)
    if op.name == "load" and isinstance(values.get("file"), str):  # at least the file's size (npz: more)
        try:
            st = os.stat(values["file"])
        except OSError:
            return None  # the verb reports the missing file
        return _Exact(st.st_size) if stat.S_ISREG(st.st_mode) else None
    if op.extra.get("nn_class"):
        numbers = sum(_numeric_any(v, False) for v in values.values())
        return 64 * (numbers + 2) ** 4 if numbers < 1e6 else math.inf  # a layer's weights: a few products
    return None


def _layer_bytes(op, ctx, values):
    """A layer's parameters and buffers, built on the meta device (no memory, no RNG), or None."""
    torch = _t()
    if ctx.device is not None or values.get("device") is not None:
        return None  # an explicit device would override the meta device: the layer would be built for real
    try:
        with torch.device("meta"), warnings_off():
            module = op.call(ctx, **values)
    except Exception:
        return None  # the real call reports the argument error
    if not isinstance(module, torch.nn.Module):
        return None
    return sum(t.numel() * t.element_size() for t in list(module.parameters()) + list(module.buffers()))


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
