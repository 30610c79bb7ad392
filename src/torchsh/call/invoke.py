"""Run one bound op: convert its tokens to values, then call it under the tensor lock (unless the
op is lock-free) with the caller's grad mode, recording PyTorch's warnings. Both faces call this.

PyTorch's exceptions become TorchshError here (with the usage of the form that ran); a block form's
Exec comes back as the result, for the face to answer with.
"""
import contextlib
import functools
import inspect
import warnings

import torch

from torchsh import guards, memory
from torchsh.errors import TorchshError, from_torch_exception, raised_by_torch
from torchsh.table import kinds
from torchsh.warned import ALWAYS, filters_mutated, first_line


def convert_all(ctx, binding):
    out = {}
    for a in binding.overload.args:
        if a.name not in binding.values:
            continue
        tok = binding.values[a.name]
        if isinstance(tok, list):
            item = kinds.KINDS[a.kind].item  # "" for a repeated flag (`--columns x --columns y`): its texts
            out[a.name] = [kinds.convert(item, t, ctx) for t in tok] if item else [t.text for t in tok]
        elif a.kind == "argv":
            out[a.name] = list(tok.value)
        else:
            out[a.name] = kinds.convert(a.kind, tok, ctx)
    return out


def invoke(ctx, op, binding, globals_=None, warned=None, convert=convert_all):
    """Run one bound op: under the tensor lock (unless lock-free), with the caller's grad mode.

    The first line of each distinct Python warning the op raised is appended to `warned`.
    convert(ctx, binding) -> {arg name: value}, under the lock (it looks handles up): by default the
    binding's tokens through their kinds; the JSON face's remembered calls bring their own (api/calls.py).
    """
    globals_ = globals_ or {}
    if getattr(ctx, "env", None) and ctx.scope is not None:  # in a scope that ended: objects nobody would free
        ctx.registry.check_scope(ctx.scope)
    lockfree = op.lockfree
    lock = _NO_CONTEXT if lockfree else ctx.app.tensor_lock(op.name)
    hooks = None if lockfree else getattr(ctx.app, "hooks", None)  # daemon/app.Hooks (a test's app may have none)
    if warned is not None and hasattr(ctx, "warned"):
        ctx.warned = warned  # a job the op starts does not say these again (torchsh/warned.py)
    with lock, _warnings_to(None if lockfree else warned):
        values = convert(ctx, binding)
        watch = hooks.request(op, values) if hooks is not None else None  # None: an op that only reads
        mode = grad_mode(ctx, globals_)
        with mode:
            try:
                result = _run(ctx, op, binding, values, watch)
            except TorchshError as e:
                if watch is not None:
                    watch.done(ctx, values, None, _mode_name(mode), e)
                raise
        if watch is not None:  # the one place every face's state-changing request is logged (the history hook)
            watch.done(ctx, values, result, _mode_name(mode))
        return result


def _run(ctx, op, binding, values, watch):
    try:
        guards.check(op.name, values)  # inputs on which PyTorch never returns (its checks may raise)
        budget = getattr(ctx.app, "memory", None)  # out_of_memory before allocating (torchsh.memory)
        if op.verb:
            if budget is not None:
                budget.admit_verb(op, ctx, values)
            return op.call(ctx, **values)
        args, kwargs = call_args(op, binding.overload, values, ctx)
        if watch is not None:
            watch.call = (args, kwargs)  # the PyTorch call itself, as a script writes it (torchsh.history)
        if budget is not None:
            budget.admit(op, binding.overload, args, kwargs)
        return op.call(*args, **kwargs)
    except TorchshError:
        raise
    except MemoryError as e:
        raise memory.allocation_failure(e) from None
    except (SystemExit, KeyboardInterrupt) as e:
        # a user's module (model open FILE.py:CLASS) calling sys.exit in forward: left alone it would
        # end the tensor thread, and every later request would wait for it forever
        raise TorchshError("torch_error", "%s's code raised %s%s" % (
            op.name, type(e).__name__, "(%s)" % e if str(e) else ""),
            "the model's own code stopped it; nothing else changed") from None
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError, AssertionError,
            ArithmeticError, AttributeError) as e:
        # PyTorch's Python code asserts, divides and calls tensor methods on what it was given
        # (Categorical(logits=5): 'int' object has no attribute 'dim'): the caller's mistake there
        if isinstance(e, (AssertionError, ArithmeticError, AttributeError)) and not raised_by_torch(e):
            raise  # our own assert, arithmetic or attribute failed: a bug, for run_cli's catch-all
        oom = memory.allocation_failure(e)  # PyTorch's allocator error, a CUDA OOM
        if oom is not None:
            raise oom from None
        err = _explain(from_torch_exception(e), values)
        usage = "usage: torch " + op.usage_line(binding.overload)  # the form that ran
        err.hint = "%s; %s" % (err.hint, usage) if err.hint else usage
        raise err from None


def _mode_name(mode):
    """The grad mode an op ran in, as the history log keeps it ("" for the default)."""
    if isinstance(mode, torch.inference_mode):
        return "inference_mode"
    return "no_grad" if isinstance(mode, torch.no_grad) else ""


class _warnings_to:
    """Record the warnings raised meanwhile, every one (not once per code location, Python's default).

    Only under the tensor lock: this swaps process-wide state (the filters, warnings.showwarning), so two
    threads must never be inside it at once. What catch_warnings(record=True) plus simplefilter("always")
    does, without its per-request filter-list copies (a few microseconds of every op). Warnings of an op
    that fails are dropped: the failure is the one line.
    """
    __slots__ = ("warned", "caught", "filters", "show")

    def __init__(self, warned):
        self.warned = warned

    def __enter__(self):
        if self.warned is not None:
            self.caught = []
            self.filters, self.show = warnings.filters, warnings.showwarning
            warnings.filters = [ALWAYS]  # a fresh list: an op's own simplefilter() must not edit a shared one
            filters_mutated()  # so a location's "already warned" mark no longer hides it
            warnings.showwarning = self._show

    def __exit__(self, kind, value, tb):
        if self.warned is not None:
            warnings.filters, warnings.showwarning = self.filters, self.show
            filters_mutated()
            if kind is None:
                for line in self.caught:
                    line = first_line(line)
                    if line and line not in self.warned:
                        self.warned.append(line)

    def _show(self, message, category, filename, lineno, file=None, line=None):
        self.caught.append(str(message))


def _explain(err, values):
    """Say which shapes clashed: PyTorch's broadcast message names sizes, not the tensors' shapes."""
    if err.code == "shape_mismatch" and "must match the size" in err.message:
        shapes = [list(v.shape) for v in values.values() if isinstance(v, torch.Tensor)]
        if len(shapes) >= 2:
            pairs = " and ".join(_shape_text(s) for s in shapes)
            err.hint = "PyTorch: %s" % err.message
            err.message = "shapes %s are not broadcastable" % pairs
    return err


def _shape_text(shape):
    return "[%s]" % ",".join(str(n) for n in shape)


_NO_CONTEXT = contextlib.nullcontext()  # reusable: no state


def grad_mode(ctx, globals_):
    if globals_.get("inference_mode") or ctx.inference_mode:
        return torch.inference_mode()
    if globals_.get("no_grad") or ctx.no_grad:
        return torch.no_grad()
    return _NO_CONTEXT


@functools.lru_cache(maxsize=None)
def _python_params(fn):
    """Parameter names of a Python-level function in order; None for builtins (ATen ops)."""
    if not inspect.isfunction(fn):
        return None
    params = inspect.signature(fn).parameters.values()
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None  # einsum(*args), atleast_1d(*tensors): typed by ATen, whose order is the call's
    return [p.name for p in params]


def call_args(op, overload, values, ctx):
    """Positional while the schema order is unbroken, keywords after; *tensors splatted."""
    args, kwargs, positional = [], {}, True
    names = _python_params(op.call)
    for i, a in enumerate(overload.args):
        if names is not None and a.name in names and names.index(a.name) != i:
            positional = False  # the table left out a parameter (F.mse_loss's size_average): keywords from here
        if a.name not in values:
            positional = False
            continue
        v = values[a.name]
        if a.type_text == "*Tensor":
            args.extend(v)
        elif positional and not a.keyword_only:
            args.append(v)
        else:
            kwargs[a.name] = v
    if op.factory and "device" not in values and ctx.device:
        kwargs["device"] = torch.device(ctx.device)
    return args, kwargs
