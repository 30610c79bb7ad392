"""Each logged op as the PyTorch it ran: what the log notes when it ran (note: a module's constructor, a
literal tensor's values, an optimizer's options), and the lines of a plain PyTorch script (lines).

An op from PyTorch's registry is its own call, `torch.NAME(*args, **kwargs)` as invoke made it; a verb's row
holds its form (OpSpec.form: a function of verbforms.py, datasets.py, files.py or here, handed in where verbs/
declares the row) or the reason it has none (OpSpec.no_form), which its refusal (not_portable) says rather
than write it wrong.
"""
import inspect

import torch

from torchsh.errors import TorchshError
from torchsh.history import files
from torchsh.history.values import encode
from torchsh.recipes.base import made as recipe_of


def note(entry, values, result, registry):
    """What the script will need that the arguments alone do not say, noted while the objects are at hand."""
    op = entry.op
    files.note(entry, values, result)
    if op == "tensor" and isinstance(result, torch.Tensor):
        entry.made["data"] = result.detach().clone()
        entry.size += result.numel() * result.element_size()
    elif op.startswith("nn.") and isinstance(result, torch.nn.Module):
        entry.made["ctor"] = constructor(result, registry, top=True)
    elif op.startswith("optim.") and isinstance(result, torch.optim.Optimizer):
        accepted = inspect.signature(type(result).__init__).parameters  # defaults may hold more (AdamW's)
        entry.made["options"] = {k: _options_value(v) for k, v in result.defaults.items() if k in accepted}
        entry.made["class"] = type(result).__name__
    elif op.startswith("sched.") and isinstance(result, _SCHEDULERS):
        name, made = recipe_of(result, "scheduler")
        entry.made["sched"] = (name, {k: encode(v, registry) for k, v in made.items()})
    if op in ("train_step", "fit"):
        entry.made["plateau"] = isinstance(values.get("sched"), torch.optim.lr_scheduler.ReduceLROnPlateau)
    if op == "forward" and _updates_stats(values.get("model")):  # train_step's row names its model already
        entry.writes += (encode(values["model"], registry),)  # BatchNorm's running statistics
    if _gets_grads(result):
        entry.made["grads"] = True  # a backward through it fills its .grad (slice.py)
    if any(result is v for v in values.values()) or op in _LINKS:
        entry.made["linked"] = True  # the output is (a view into) an input: a write to one writes the other


_SCHEDULERS = (torch.optim.lr_scheduler.LRScheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
_LINKS = frozenset({"nn.sequential", "nn.parameters", "detach"})


def _gets_grads(result):
    if isinstance(result, (list, tuple)):
        return any(_gets_grads(x) for x in result)
    return isinstance(result, torch.nn.Module) or (isinstance(result, torch.Tensor) and result.requires_grad
                                                   and (result.is_leaf or result.retains_grad))


def _options_value(v):
    return v if isinstance(v, (bool, int, float, str, tuple, type(None))) else ("opaque", repr(v)[:200])


def _updates_stats(model):
    return isinstance(model, torch.nn.Module) and model.training and any(True for _ in model.buffers())


def constructor(module, registry, top=False):
    """("ctor", class name, values) of a module torchsh built; a held child is its handle."""
    held = None if top else registry.handle_of(module)
    if held is not None:
        return ("h", held)
    try:
        name, values = recipe_of(module, "module")
    except TorchshError:
        return ("opaque", "a %s torchsh did not build" % type(module).__name__)
    return ("ctor", name, {k: _ctor_value(v, registry) for k, v in values.items()})


def _ctor_value(v, registry):
    if isinstance(v, torch.nn.Module):
        return constructor(v, registry)
    if isinstance(v, (list, tuple)):
        return [_ctor_value(x, registry) for x in v]
    if isinstance(v, torch.dtype):
        return ("dtype", str(v).replace("torch.", ""))
    if isinstance(v, torch.device):
        return ("device", str(v))
    return v if isinstance(v, (bool, int, float, str, type(None))) else ("opaque", repr(v)[:200])


def refuse(op, why="it has no PyTorch form in `torch history --python` yet"):
    return TorchshError("not_portable", "cannot write %s as PyTorch: %s" % (op, why),
                        "`torch history --for HANDLE` leaves out what the object does not depend on")


# -- the script's lines ---------------------------------------------------------------------------
def lines(e, r):
    """The script lines of entry e; r is the writer (python.Writer): r.v(handle), r.lit(value), r.outs(e).

    Its row's form first (an entry no row of r's table names, from a log written without one or a session file
    of another torchsh: the form what was noted implies), then the call of an op of PyTorch's registry, then its
    outputs' values as the daemon holds them; else it is refused with the reason its row states."""
    if e.made.get("unnoted"):
        raise refuse(e.op, "the history could not note how it ran (the daemon log has why)")
    row = r.row(e.op)
    form = row.form if row is not None else _noted_form(e)
    written = form(e, r) if form is not None else None
    if written is not None:
        return written
    if "call" in e.made:  # an op of PyTorch's registry: its name is PyTorch's (dotted: nn.functional.relu)
        args, kwargs = e.made["call"]
        text = ", ".join([r.lit(a) for a in args] + ([r.keywords(kwargs)] if kwargs else []))
        return ["%s = torch.%s(%s)" % (r.outs(e), r.pytorch_op(e.op), text)]
    held = r.held_values(e)
    # a tensor read from a file or stdin, unchanged since: its value, not its source. e.op in the comment is
    # an op table name, or a dotted Python name where a session file restored it (persist._entry_of)
    if held is not None:
        return ["%s = %s  # %s's, as the daemon holds it" % (r.v(h), r.tensor_literal(t, t.requires_grad), e.op)
                for h, t in held]
    raise refuse(e.op, *((row.no_form,) if row is not None and row.no_form else ()))


def _noted_form(e):
    """The form of an entry without a row, from what note() kept: a file read, a module's constructor, an
    optimizer's options, a scheduler's recipe (the forms of the rows that note them)."""
    if "file" in e.made:
        return files.lines
    for prefix, key, form in (("nn.", "ctor", constructed), ("optim.", "options", optimizer),
                              ("sched.", "sched", scheduler)):
        if e.op.startswith(prefix) and key in e.made:
            return form
    return None


# -- the forms the rows hold (verbs/ hands them to @verb, or to the rows it makes from classes) ----------
def constructed(e, r):
    """A module a class row (nn linear) or nn sequential built: its constructor, as note() kept it."""
    return ["%s = %s" % (r.outs(e), r.lit(e.made["ctor"]))] if "ctor" in e.made else None


def scheduler(e, r):
    """A scheduler a class row (sched step_lr) built, from the recipe note() kept."""
    if "sched" not in e.made:
        return None
    name, values = e.made["sched"]
    return ["%s = torch.optim.lr_scheduler.%s(%s)" % (r.outs(e), r.name(name), r.keywords(values))]


def optimizer(e, r):
    """An optimizer a class row (optim sgd) built, with the options note() kept."""
    if "options" not in e.made:
        return None
    if "params" not in e.args:
        raise refuse(e.op, "parameter groups are not written yet; give the optimizer handles")
    options = ", ".join("%s=%s" % (r.name(k), _option_text(v, r)) for k, v in e.made["options"].items())
    return ["%s = torch.optim.%s(%s, %s)" % (r.outs(e), r.name(e.made["class"]), r.params(e.args["params"]), options)]


def _option_text(v, r):
    """An optimizer's option (a number, a word, None, a tuple of them: betas) as a literal."""
    if isinstance(v, tuple) and v and v[0] == "opaque":
        raise refuse("an optimizer", "its option %s has no literal form" % v[1])
    if isinstance(v, tuple):
        return "(%s%s)" % (", ".join(r.lit(x) for x in v), "," if len(v) == 1 else "")
    return r.lit(v)
