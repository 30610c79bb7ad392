"""`--compile`: a training step's forward+loss and optimizer step run through torch.compile, compiled once
per model, optimizer and input signature and kept for the daemon's life, so later `train_step --compile`
commands and `fit --compile` epochs reuse them.

What is compiled was chosen by measuring (MLP 784-512-512-10, batch 64, 2 CPU cores, docs/training.md):
torch.compile(model) alone was slower than eager (its graph is the small part of a step); the forward with
its loss as one graph and the optimizer step as another (the backward runs AOTAutograd's compiled graph)
were as fast as the whole step as one function, and leave the fit loop's accumulation, clip and metrics
(which need the output) as they are. On that MLP the gain is the optimizer step's: its compiled
forward+backward is slower than eager's (bench/compile_floor.py times torch.compile's own ratio).

The learning rate is a tensor only inside the compiled optimizer step: each call fills a tensor kept per
param group with the group's float lr and puts it in the group for the call's length. Dynamo then guards on
a tensor, not on the value, so a scheduler changing the lr never recompiles (PyTorch's recipe "compiling
the optimizer with an LR scheduler"), while the optimizer's state_dict, checkpoints, `torch optim` views and
the scheduler verbs keep seeing a float (a checkpoint loads into a compiled or an uncompiled run alike).

Each compiled function is a copy of its code object (dynamo caches per code object, up to a recompile
limit of 8: one shared code object for every model would fall back to eager past 8). COMPILE_LOCK is held
around every compiled call (torch.compile is not thread-safe; the tensor thread runs them, a sweep's or a
job's work may not). Each entry counts its compile time and its recompiles (frames dynamo converted after
the first call) for `torch daemon status`.
"""
import threading
import time
import types
import warnings
import weakref

import torch

from torchsh.train.loss import functions as losses

COMPILE_LOCK = threading.RLock()
TENSOR_LR = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)  # whose step takes a tensor lr compiled
# run.json's "compile" of a `fit --compile --log DIR`: the largest |weight difference| from the eager run,
# measured on an MLP 784-512-512-10, batch 64, random labels (docs/training.md#compile): SGD's stays at
# float32's rounding; Adam's first steps divide tiny gradients by their own size, and its drift then grows
# as training on random labels does with any change of summation order
RUN_RECORD = {"what": "forward+loss and optimizer step", "mode": "default", "bit_exact": False,
              "max_drift_measured": {"sgd_momentum_after_192_steps": 2.2e-8, "adam_after_1_step": 1.1e-5,
                                     "adam_after_64_steps": 8e-3, "adam_after_192_steps": 0.059}}
_entries = {}              # key -> Compiled (the key holds ids; each entry a weakref to its objects)
_entries_lock = threading.Lock()  # status reads the entries from another thread


class Compiled:
    """One compiled function and what `torch daemon status` shows of it."""

    def __init__(self, fn, owner, what, signature):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.fn = torch.compile(_own_code(fn), dynamic=False)
        self.owner = weakref.ref(owner)  # the model (forward+loss) or the optimizer (step)
        self.what, self.signature = what, signature
        self.calls, self.compile_s, self.recompiles = 0, 0.0, 0
        self.lrs = []  # an optimizer step's lr tensors, one per param group
        self.eager_first = False  # an optimizer step's first, with no state yet, ran eagerly

    def __call__(self, *args):
        from torch._dynamo.utils import counters  # here: importing dynamo costs ~0.9 s, every daemon's start
        with COMPILE_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch's own deprecations inside dynamo are not the caller's
            frames, start = counters["frames"]["total"], time.monotonic()
            result = self.fn(*args)
            compiled = counters["frames"]["total"] > frames
            if self.calls == 0:
                self.compile_s = time.monotonic() - start
            elif compiled:
                self.recompiles += 1
            self.calls += 1
            return result

    def row(self):
        return {"what": self.what, "signature": self.signature, "compile_s": round(self.compile_s, 3),
                "recompiles": self.recompiles, "calls": self.calls}


def forward_loss(model, loss, loss_args, inputs, target):
    """The compiled (output, loss) = (model(*inputs), loss(output, target, **loss_args)) for these shapes,
    called as f(model, inputs, target): the model is an argument, not held, so freeing it frees it."""
    signature = " ".join(_shape(t) for t in (*inputs, target))
    key = ("forward", id(model), loss, losses.as_json(loss_args), signature)

    def step(model, inputs, target):
        output = model(*inputs)
        return output, loss(output, target, **loss_args)
    return _entry(key, lambda: Compiled(step, model, "forward+%s" % getattr(loss, "__name__", "loss"), signature))


def optimizer_step(optimizer):
    """The compiled optimizer.step() with the lr a tensor for the call (or the plain step, eager, for an
    optimizer whose step takes no tensor lr: its float lr would recompile at every scheduler change)."""
    if not isinstance(optimizer, TENSOR_LR):
        return optimizer.step
    compiled = _entry(("step", id(optimizer)), lambda: Compiled(
        _step, optimizer, "%s step" % type(optimizer).__name__.lower(), ""))
    return lambda: _with_tensor_lr(compiled, optimizer)


def _step(optimizer):
    optimizer.step()


def _with_tensor_lr(compiled, optimizer):
    groups = optimizer.param_groups
    if not optimizer.state and not compiled.eager_first:
        compiled.eager_first = True  # the step that makes the state (momentum, Adam's moments) runs eagerly:
        optimizer.step()             # compiled before it, the next would find the state changed and recompile
        return
    if len(compiled.lrs) != len(groups):  # the same tensors every call: a new one would be a new guard
        compiled.lrs = [torch.tensor(0.0, dtype=torch.float32) for _ in groups]
    floats = [g["lr"] for g in groups]
    for group, tensor, value in zip(groups, compiled.lrs, floats):
        tensor.fill_(float(value))
        group["lr"] = tensor
    try:
        compiled(optimizer)
    finally:
        for group, value in zip(groups, floats):
            group["lr"] = value


def entries():
    """[(owner object, row)] of the compiled functions whose model or optimizer is still alive."""
    with _entries_lock:
        items = list(_entries.values())
    return [(c.owner(), c.row()) for c in items if c.owner() is not None]


def _entry(key, make):
    with _entries_lock:
        found = _entries.get(key)
    if found is not None and found.owner() is not None:
        return found
    made = make()
    with _entries_lock:
        for stale in [k for k, c in _entries.items() if c.owner() is None]:
            del _entries[stale]  # a freed model's ids may be reused by a new one
        _entries[key] = made
    return made


def _own_code(fn):
    """FN with a code object of its own, so dynamo keeps a cache (and a recompile limit) just for it."""
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def _shape(t):
    if not isinstance(t, torch.Tensor):
        return type(t).__name__
    return "%s:%s" % ("x".join(map(str, t.shape)) or "scalar", str(t.dtype).removeprefix("torch."))
