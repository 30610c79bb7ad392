"""The budget itself: its setting and default, the machine's and the cgroup's memory, the daemon's
RSS, admission (Budget.admit, run under the tensor lock before every op) and the out_of_memory errors.
How big an op's output will be is sizes.py's business. Imports no torch at module level.
"""
import logging
import os
import re

from torchsh.errors import TorchshError
from torchsh.memory import files, heap, sizes

log = logging.getLogger("torchd")

ENV = "TORCHSH_MAX_MEMORY"
DEFAULT = "50%"   # of min(RAM, cgroup limit): room left for temporaries, the rest of the machine, the shell
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b)?\s*$", re.I)
_UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as 0x7ffffffffffff000
_CUDA_SMALL = 64 << 20  # a CUDA output under this is not checked: a CUDA OOM is catchable anyway


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


SMALL_UNSEEN = 16 << 20  # bytes of small outputs admitted between two RSS readings, at most


# -- the budget -------------------------------------------------------------------------------------
class Budget:
    """The daemon's memory budget. admit() runs under the tensor lock, before every ATen op."""

    def __init__(self, limit, rule):
        self.limit = limit      # bytes, or None: no host budget (allocation failures are still caught)
        self.rule = rule        # how it was set, in words, for status and messages
        self.refused = 0        # ops refused so far, for status
        self.headroom = 0       # bytes small ops may still add before RSS is read again (below)

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

        RSS is read fresh (one pread) except for small outputs while their sum since the last reading
        stays under SMALL_UNSEEN and under the room that reading left: what admitted ops may add unseen
        is bounded by that, never more.
        """
        try:
            bound, cuda = sizes.bound(op, overload, args, kwargs)
        except Exception:  # a bug here must never break an op: let it run, log why
            log.exception("memory bound of %s failed; admitting it", op.name)
            return
        if cuda is not None:
            return self._admit_cuda(op, overload, args, kwargs, bound, cuda)
        if self.limit is None or bound is None:
            return
        if bound <= self.headroom:  # `add` of small tensors: a few microseconds of /proc reading spared
            self.headroom -= bound
            return
        room = self.limit - rss_bytes()
        if bound <= room:
            self.headroom = min(SMALL_UNSEEN, room) - bound  # this op's output is unseen too
            return
        self.headroom = 0
        size = bound if isinstance(bound, sizes.Exact) else sizes.exact_bytes(op, overload, args, kwargs)
        self._admit_size(size)

    def admit_verb(self, op, ctx, values):
        """The verbs that can allocate far more than their inputs hold: `contiguous` and `to` of an expanded
        view, `load` of a big file, `value` and `print` (text costs ~256 bytes an element at its peak).
        Layers and optimizers admit themselves as they are built (memory/modules.py), whatever face builds
        them. Other verbs are not checked (their allocation failures still are)."""
        self.headroom = 0  # what a verb allocates is not counted in it: the next op reads RSS afresh
        try:
            bound = sizes.verb_bound(op, ctx, values)
        except Exception:
            log.exception("memory bound of %s failed; admitting it", op.name)
            return
        if self.limit is not None:
            try:
                self._admit_size(bound)
            except TorchshError as e:
                instead = files.whole_read_hint(op.name, values)  # a .parquet read whole: --stream reads it
                if instead is None:
                    raise
                raise TorchshError(e.code, e.message, "%s; %s" % (instead, e.hint)) from None

    def admit_bytes(self, size, what="output"):
        """Refuse (out_of_memory) SIZE bytes a verb is about to allocate itself, when they would not fit;
        what names them in the refusal ("output", "Linear's parameters and buffers")."""
        if self.limit is not None:
            self._admit_size(size, what)

    def _admit_size(self, size, what="output"):
        if size is None:
            return  # cannot tell: run it; an allocation failure is caught as out_of_memory
        rss = rss_bytes()
        if rss + size > self.limit:
            heap.malloc_trim()  # freed tensors may still count in RSS; only now is the cost worth it
            rss = rss_bytes()
        if rss + size > self.limit:
            self.refused += 1
            raise over_budget(int(size), rss, self.limit, self.rule, what)

    def _admit_cuda(self, op, overload, args, kwargs, bound, device):
        if bound is not None and bound < _CUDA_SMALL:
            return
        size = bound if isinstance(bound, sizes.Exact) else sizes.exact_bytes(op, overload, args, kwargs)
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


def over_budget(size, rss, limit, rule, what="output"):
    return TorchshError(
        "out_of_memory", "%s of %s would exceed the memory budget of %s (%s in use)"
        % (what, human(size), human(limit), human(rss)),
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
