"""Each logged op as the PyTorch it ran: what the log notes when it ran (note: a module's constructor, a
literal tensor's values, an optimizer's options), and the lines of a plain PyTorch script (lines).

An op from PyTorch's registry is its own call, `torch.NAME(*args, **kwargs)` as invoke made it; a verb has
a form here (FORMS), or is refused by name (not_portable) rather than written wrong.
"""
import inspect

import torch

from torchsh.errors import TorchshError
from torchsh.history import datasets, files
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
    if op in ("forward", "train_step") and _updates_stats(values.get("model")):
        entry.writes = (encode(values["model"], registry),)  # BatchNorm's running statistics
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
    """The script lines of entry e; r is the writer (python.Writer): r.v(handle), r.lit(value), r.outs(e)."""
    if e.made.get("unnoted"):
        raise refuse(e.op, "the history could not note how it ran (the daemon log has why)")
    form = FORMS.get(e.op) or datasets.FORMS.get(e.op)
    written = form(e, r) if form is not None else None
    if written is not None:
        return written
    if e.op in datasets.FORMS:  # other formats, options or worker processes
        raise refuse(e.op, datasets.UNWRITTEN[e.op])
    read = files.lines(e, r) if "file" in e.made else None
    if read is not None:  # a file read, from its path
        return read
    if e.op.startswith("nn.") and "ctor" in e.made:
        return ["%s = %s" % (r.outs(e), r.lit(e.made["ctor"]))]
    if e.op.startswith("optim.") and "options" in e.made:
        return _optimizer(e, r)
    if e.op.startswith("sched.") and "sched" in e.made:
        name, values = e.made["sched"]
        return ["%s = torch.optim.lr_scheduler.%s(%s)" % (r.outs(e), r.name(name), r.keywords(values))]
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
    raise refuse(e.op)


def _optimizer(e, r):
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


def _tensor(e, r):
    t = e.made.get("data")
    if t is None:
        raise refuse("tensor", "its values were not kept")
    return ["%s = %s" % (r.outs(e), r.tensor_literal(t, bool(e.args.get("requires_grad"))))]


def _kwargs_text(e, r, names, defaults):
    """`, name=value` for each argument given that differs from the verb's default."""
    return "".join(", %s=%s" % (n, r.lit(e.args[n])) for n in names
                   if n in e.args and e.args[n] != defaults.get(n))


def _backward(e, r):
    rest = _kwargs_text(e, r, ("gradient", "retain_graph", "create_graph"),
                        {"gradient": None, "retain_graph": None, "create_graph": False})
    return ["%s.backward(%s)" % (r.lit(e.args["loss"]), rest.lstrip(", "))]


def _zero_grad(e, r):
    out, none = [], e.args.get("set_to_none")
    for h in e.args["handles"]:
        name = r.lit(h)
        if h[1].startswith("tensor://"):
            if none:
                out.append("%s.grad = None" % name)
            else:
                out.append("if %s.grad is not None: %s.grad.requires_grad_(False); %s.grad.zero_()" % (name, name, name))
        else:
            out.append("%s.zero_grad(set_to_none=%s)" % (name, r.lit(True if none is None else none)))
    return out


def _train_step(e, r):
    a = e.args
    if a.get("autocast") is not None or a.get("compile"):
        raise refuse("train_step", "--%s is not written yet" % ("compile" if a.get("compile") else "autocast"))
    m, o = r.lit(a["model"]), r.lit(a["optimizer"])
    given = e.made.get("loss_args", a.get("loss_args"))  # as it ran: weight, pos_weight tensors (train/losses.py)
    options = "".join(", %s=%s" % (r.name(k), r.lit(v)) for k, v in (given or {}).items()) \
        if isinstance(given, dict) else ""
    if isinstance(a.get("loss_args"), str):
        raise refuse("train_step", "--loss_args as text is not written yet")
    body = ["%s.zero_grad()" % o,
            "_loss = torch.nn.functional.%s(%s(%s), %s%s)" % (r.name(a.get("loss", "mse_loss")), m, r.lit(a["input"]),
                                                              r.lit(a["target"]), options),
            "_loss.backward()"]
    if a.get("clip") is not None:
        body.append("torch.nn.utils.clip_grad_norm_([p for g in %s.param_groups for p in g['params']], %s)"
                    % (o, r.lit(a["clip"])))
    body.append("%s.step()" % o)
    if a.get("sched") is not None:
        body.append("%s.step(%s)" % (r.lit(a["sched"]), "_loss.item()" if e.made.get("plateau") else ""))
    return body


def _forward(e, r):
    inputs = ", ".join(r.lit(x) for x in e.args["inputs"])
    call = "%s(%s)" % (r.lit(e.args["model"]), inputs)
    return ["%s = %s" % (r.outs(e), call if len(e.outputs) == 1 else "_flat(%s)" % call)]


def _predict(e, r):
    if "inputs" not in e.args:
        raise refuse("predict", "predictions over a dataset are not written yet")
    m = r.lit(e.args["model"])
    return ["_was = %s.training; %s.eval()" % (m, m), "with torch.no_grad():"] + \
        ["    " + line for line in _forward(e, r)] + ["%s.train(_was)" % m]


def _method(call, *names):
    """A verb that is one method call on its first argument: `x.call(second, …)`."""
    def form(e, r):
        target = r.lit(e.args[names[0]])
        rest = ", ".join(r.lit(e.args[n]) for n in names[1:] if n in e.args)
        text = "%s.%s(%s)" % (target, call, rest)
        return ["%s = %s" % (r.outs(e), text) if e.outputs else text]
    return form


def _requires_grad(e, r):
    value = e.args.get("value")
    return [] if value is None else ["%s.requires_grad_(%s)" % (r.lit(e.args["target"]), r.lit(value))]


def _clip(fn, option_names):
    def form(e, r):
        options = "".join(", %s=%s" % (n, r.lit(e.args[n])) for n in option_names if n in e.args)
        return ["torch.nn.utils.%s(%s%s)" % (fn, r.params(e.args["targets"]), options)]
    return form


FORMS = {
    "tensor": _tensor,
    "manual_seed": lambda e, r: ["torch.manual_seed(%d)" % e.args["seed"]],
    "backward": _backward,
    "zero_grad": _zero_grad,
    "step": _method("step", "optimizer"),
    "train_step": _train_step,
    "forward": _forward,
    "predict": _predict,
    "detach": _method("detach", "input"),
    "contiguous": _method("contiguous", "input"),
    "to": lambda e, r: ["%s = %s.to(%s)" % (r.outs(e), r.lit(e.args["input"]), ", ".join(
        "%s=%s" % (k, r.lit(e.args[k])) for k in ("dtype", "device", "copy") if e.args.get(k) not in (None, False)))],
    "sched.step": lambda e, r: ["%s.step(%s)" % (r.lit(e.args["scheduler"]),
                                                 r.lit(e.args["metric"]) if e.args.get("metric") is not None else "")],
    "retain_grad": _method("retain_grad", "input"),
    "grad": lambda e, r: ["%s = %s.grad.clone()" % (r.outs(e), r.lit(e.args["input"]))],
    "requires_grad": _requires_grad,
    "nn.train": _method("train", "model"),
    "nn.eval": _method("eval", "model"),
    "nn.parameters": lambda e, r: ["%s = list(%s.parameters())" % (r.outs(e) + ("," if len(e.outputs) == 1 else ""),
                                                                   r.lit(e.args["model"]))],
    "clip_grad_norm": _clip("clip_grad_norm_", ("max_norm", "norm_type", "error_if_nonfinite")),
    "clip_grad_value": _clip("clip_grad_value_", ("clip_value",)),
}
