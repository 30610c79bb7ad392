"""The history log: one Entry per request that changed the daemon's state, the newest MAX_ENTRIES and
MAX_BYTES of them (the oldest go first), its size counted in `torch daemon status`.

call/invoke.py, the one place every face's requests pass after binding (the client, the fast paths, the
JSON API), asks `watch(op)` before an op runs: None for an op that only reads (value, shape, census, help:
it returns no object and changes none), else a Watch that notes the generator state, then the entry once the
op returned. Whether an op changes state is its row's to say (OpSpec.writes, or a return that makes a
handle). Arguments are kept as handles (the registry knows each held object's) and literals; the outputs
are the handles the request's Context put (its `made`, filled as the reply is written); the writes are the
handles given to the arguments its row's `writes` names.
"""
import collections
import ctypes
import itertools
import logging
import re
import threading
import time
from dataclasses import dataclass, field

import torch

from torchsh import protocol
from torchsh.history import forms, resumed
from torchsh.history.jobrun import JobRun
from torchsh.history.values import encode, handles_in, literal_bytes, plain

_logger = logging.getLogger("torchd")

MAX_ENTRIES = 20000
MAX_BYTES = 64 * 1024 * 1024
_ENTRY_BYTES = 256  # an entry's own fields, roughly: what the bound counts besides its tensors and RNG states

# What a row's `writes` may name besides its arguments: state no argument holds (its entry notes no handle for it)
UNNAMED_STATE = ("generator",  # PyTorch's default random generator (manual_seed): python.units follows it
                 "grads")      # the .grad of what the loss was computed from (backward): slice.writes follows it
# An op's return that is (or holds) an object the daemon keeps under a handle
_MAKES = re.compile(r"\b(Tensor|Module|Optimizer|Scheduler|Dataset|Loader|Distribution|Handle|LanguageModel)\b")
_GENERATOR = torch.default_generator  # the CPU generator: torch.get_rng_state() is its get_state()


@dataclass(slots=True)
class Entry:
    seq: int
    op: str                   # the op table's name (add, nn.linear, train_step)
    args: dict                # argument name -> encoded value (encode()): handles as ("h", HANDLE), literals as is
    outputs: list             # the handles it made, in order
    exit: int = 0
    rng: object = None        # the CPU generator's state before it ran (a uint8 tensor), when it drew randomness
    grad: str = ""            # "no_grad" or "inference_mode" when it ran in one
    at: float = 0.0
    size: int = _ENTRY_BYTES
    writes: tuple = ()        # handles of objects it changed in place: those its row's `writes` names (step's
                              # optimizer), and a forward's model when it updated BatchNorm's statistics
    made: dict = field(default_factory=dict)  # extra facts a python form needs (a module's constructor recipe)

    def row(self):
        return {"seq": self.seq, "op": self.op, "args": {k: plain(v) for k, v in self.args.items()},
                "outputs": list(self.outputs), "exit": self.exit, "random": self.rng is not None,
                "grad_mode": self.grad or None, "at": round(self.at, 3)}


class HistoryLog:
    def __init__(self, max_entries=MAX_ENTRIES, max_bytes=MAX_BYTES):
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._entries = collections.deque()
        self._bytes = 0
        self._seq = itertools.count(1)
        self._lock = threading.Lock()  # status reads the counts while the tensor thread appends
        self.dropped = 0               # entries let go to stay within the bounds

    def watch(self, op, values=None):
        """A Watch for an op that may change state, else None (an op that only reads is not logged)."""
        if not logged(op):
            return None
        return Watch(self, op, values)

    def add(self, entry):
        with self._lock:
            entry.seq = next(self._seq)
            self._entries.append(entry)
            self._bytes += entry.size
            while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                self._bytes -= self._entries.popleft().size
                self.dropped += 1

    def entries(self):
        with self._lock:
            return list(self._entries)

    def restore(self, entries):
        """A saved session's entries, before what this daemon logged itself; the last is marked as where the
        saving daemon's generator ends (this daemon's draws do not follow from its)."""
        entries = list(entries)
        if entries:
            entries[-1].made["generator_ends"] = True
        with self._lock:
            mine = list(self._entries)
            self._entries = collections.deque()
            self._bytes = 0
        for e in entries + mine:
            self.add(e)

    def stats(self):
        with self._lock:
            return {"entries": len(self._entries), "bytes": self._bytes, "max_entries": self.max_entries,
                    "max_bytes": self.max_bytes, "dropped": self.dropped}


_STATEFUL = {}  # op name -> changes_state(op), computed once per op


def changes_state(op):
    """Does op write in place (its row's `writes`: step, zero_grad, manual_seed) or make a handle?"""
    found = _STATEFUL.get(op.name)
    if found is None:
        found = _STATEFUL[op.name] = bool(op.writes) or any(_MAKES.search(ov.returns or "") for ov in op.overloads)
    return found


def logged(op):
    """Is a request of op logged: it may change state, and it runs under the tensor lock, not as a block form."""
    return not (op.lockfree or op.block) and changes_state(op)


class Watch:
    """One op's run, seen from the log: the generator state before, the entry after."""
    __slots__ = ("log", "op", "before", "started", "call", "resume")

    def __init__(self, log, op, values=None):
        self.log, self.op, self.call = log, op, None
        self.before = _GENERATOR.get_state()
        self.started = time.time()
        self.resume = None  # fit --resume: its checkpoint, seen before the run overwrites it (resumed.py)
        if op.name == "fit" and values and values.get("resume") is not None:
            try:
                self.resume = resumed.note(values)
            except Exception:  # never in the way of the run: the script refuses a resume it knows nothing of
                _logger.exception("history: could not read the checkpoint fit resumes from")

    def done(self, ctx, values, result, grad="", error=None):
        """Log the op: it returned (error None) or failed with a TorchshError (its exit status is kept).
        The op has run: a failure to log it must not turn its success into an error, so it is logged as
        unnoted (a script refuses it by name) and the traceback goes to the daemon log."""
        try:
            self._log(ctx, values, result, grad, error)
        except Exception:
            _logger.exception("history: could not log %s", self.op.name)
            self.log.add(Entry(0, self.op.name, {}, ctx.made, made={"unnoted": True}, at=self.started))

    def _log(self, ctx, values, result, grad, error):
        drew = _state_bytes(self.before) != _state_bytes(_GENERATOR.get_state())
        registry = ctx.registry
        args = {k: encode(v, registry) for k, v in values.items()}
        entry = Entry(0, self.op.name, args, ctx.made, exit=protocol.exit_status(error.code) if error else 0,
                      rng=self.before if drew else None, grad=grad, at=self.started,
                      writes=_written(args, self.op.writes))
        entry.size = _ENTRY_BYTES + 32 * len(args) + (self.before.numel() if drew else 0) + literal_bytes(args)
        if self.call is not None:  # the same objects as the arguments, mostly: encoded once
            entry.made["call"] = self._call(values, args, registry)
        if self.resume is not None:
            entry.made["resume"] = self.resume
            kept = (self.resume.get("checkpoint") or {}).get("tensors", {}).values()
            entry.size += sum(t.numel() * t.element_size() for t in kept)  # a checkpoint the note kept
        if error is None:
            forms.note(entry, values, result, registry)
            noted = getattr(ctx, "noted", None)
            if noted:
                entry.made.update((k, v if isinstance(v, JobRun) else encode(v, registry))  # its end, when asked
                                  for k, v in noted.items())
        elif error.code == "end_of_epoch":  # a failure that changed state: the loader starts its next epoch
            entry.made["epoch_end"] = True
        self.log.add(entry)

    def _call(self, values, args, registry):
        """The PyTorch call's (positional, keywords), encoded: its objects are the arguments' (args), mostly,
        whose encoding is reused (loops, not comprehensions: this runs for every logged op of PyTorch's)."""
        known = {}
        for k, v in values.items():
            known[id(v)] = args[k]
        positional, keywords = self.call
        encoded = []
        for v in positional:
            encoded.append(known[id(v)] if id(v) in known else encode(v, registry))
        named = {}
        for k, v in keywords.items():
            named[k] = known[id(v)] if id(v) in known else encode(v, registry)
        return encoded, named


def _written(args, names):
    """(("h", HANDLE), ...) of the objects given to the arguments `names` (the row's `writes`): an argument that
    is one held object is its encoding as it is; a list or dict is searched (handles_in)."""
    out = []
    for name in names:
        value = args.get(name)
        if type(value) is tuple and value and value[0] == "h":
            out.append(value)
        elif value is not None:
            out.extend(("h", h) for h in handles_in(value))
    return tuple(out)


def _state_bytes(state):
    """A generator state's bytes (a contiguous CPU uint8 tensor), to compare two: read through ctypes, a third of
    what .numpy().tobytes() costs (~6 us of every logged request were these two reads and their compare)."""
    return ctypes.string_at(state.data_ptr(), state.numel())
