"""Optimizers from the shell: `torch optim KIND MODEL|PARAMS… [--flags]` for every torch.optim optimizer,
`step`, `optim lr`, `optim info`, `optim list`, `clip_grad_norm`, `clip_grad_value`.

The five documented optimizers take exactly these options, with these defaults (the contract;
note sgd's lr default 0.01, where PyTorch's own is 1e-3):

    sgd      --lr 0.01  --momentum 0  --dampening 0  --weight_decay 0  --nesterov false
    adam     --lr 0.001 --betas [0.9,0.999] --eps 1e-8 --weight_decay 0 --amsgrad false
    adamw    --lr 0.001 --betas [0.9,0.999] --eps 1e-8 --weight_decay 0.01 --amsgrad false
    rmsprop  --lr 0.01  --alpha 0.99 --eps 1e-8 --weight_decay 0 --momentum 0 --centered false
    adagrad  --lr 0.01  --lr_decay 0 --weight_decay 0 --initial_accumulator_value 0 --eps 1e-10

The update rules are PyTorch's, e.g. SGD with momentum μ, dampening τ, weight decay λ:
g ← ∇θ + λθ;  b ← μb + (1-τ)g;  θ ← θ - lr·(nesterov ? g + μb : b). Every other optimizer
(adadelta, adamax, asgd, lbfgs, nadam, radam, rprop, sparseadam, adafactor, …) takes the options
of its PyTorch signature with PyTorch's defaults. Bad values (negative lr, nesterov without
momentum) are errors before anything is built; a misspelled flag is an error listing the valid ones.

Parameter groups: each word is a handle (module or tensor) or a quoted group, handles followed by
its own options: `torch optim sgd "$body" "$head lr=0.1 momentum=0.9" --lr 0.01`. Plain handles
form one group with the command's flags; each quoted group overrides them for its own parameters.
"""
import numpy as np
import torch

from torchsh import memory
from torchsh.call import tokens
from torchsh.errors import TorchshError, bad_argument
from torchsh.history import forms, verbforms
from torchsh.registry.handles import looks_like_handle
from torchsh.results import JsonText, Table
from torchsh.table import classes as tables, docargs, kinds
from torchsh.table.from_torch import first_paragraph, summary_line
from torchsh.table.signature import WordsOpSpec, class_args
from torchsh.table.spec import ArgSpec, Overload, parse_schema
from torchsh.verbs import verb

DOCUMENTED = {
    "sgd": "float lr=0.01, float momentum=0, float dampening=0, float weight_decay=0, bool nesterov=False",
    "adam": "float lr=0.001, float[] betas=[0.9,0.999], float eps=1e-08, float weight_decay=0, bool amsgrad=False",
    "adamw": "float lr=0.001, float[] betas=[0.9,0.999], float eps=1e-08, float weight_decay=0.01, bool amsgrad=False",
    "rmsprop": "float lr=0.01, float alpha=0.99, float eps=1e-08, float weight_decay=0, float momentum=0, "
               "bool centered=False",
    "adagrad": "float lr=0.01, float lr_decay=0, float weight_decay=0, float initial_accumulator_value=0, "
               "float eps=1e-10",
}
# implementation switches, not hyperparameters: PyTorch picks the right kernel on its own
_NOT_OPTIONS = ("params", "foreach", "capturable", "differentiable", "fused")


def generated_rows():
    rows = []
    for word, cls in tables.optimizers().items():
        if word in DOCUMENTED:
            _, _, opts, _ = parse_schema("x(*, %s)" % DOCUMENTED[word], overload_names=False)
        else:
            opts = [ArgSpec(a.name, a.kind, a.default, a.optional, True, a.type_text)
                    for a in class_args(cls, drop=_NOT_OPTIONS)]
        opts = tuple(opts)
        by_handles = (ArgSpec("params", "handles", type_text="Handle[]"),) + opts
        by_groups = (ArgSpec("groups", "argv", type_text="Argv"),) + opts
        doc = first_paragraph(cls)
        rows.append(WordsOpSpec(
            name="optim." + word, category="optim", summary=summary_line(doc) or "torch.optim.%s" % cls.__name__,
            overloads=[Overload(args=by_handles, returns="Optimizer"), Overload(args=by_groups, returns="Optimizer")],
            call=_builder(word, cls, opts), verb=True, doc=doc, aliases=(cls.__name__,),
            arg_docs=docargs.arg_docs(cls, [Overload(args=by_handles)]),
            cls=cls, class_kind="optim", words_only=True, word_aliases=("optim." + cls.__name__,),
            words_metavar="'HANDLE… key=value…'", form=forms.optimizer))
    return rows


def _builder(word, cls, opts):
    documented = word in DOCUMENTED

    def build(ctx, params=None, groups=None, **given):
        options = {a.name: a.default for a in opts} if documented else {}
        options.update(given)
        param_groups = _param_groups(ctx, params if params is not None else groups, opts)
        options = {k: _pytorch_value(v) for k, v in options.items()}
        memory.admit_optimizer(ctx, cls, param_groups, options)  # its state, refused before it is built
        try:
            return cls(param_groups, **options)
        except (ValueError, TypeError) as e:
            raise bad_argument("%s: %s" % (word, str(e).split("\n")[0]), "`torch optim %s --help` lists the options"
                               % word) from None
    build.__name__ = "optim_" + word
    return build


def _pytorch_value(v):
    return tuple(v) if isinstance(v, list) else v  # betas, etas, step_sizes are tuples in PyTorch


def _param_groups(ctx, words, opts):
    """Words -> PyTorch param groups: plain handles pool into the first group, quoted groups stand alone."""
    plain, groups = [], []
    for word in words:
        parts = word.split()
        if len(parts) == 1 and looks_like_handle(parts[0]):
            plain += params_of(ctx, parts[0])
        else:
            groups.append(_group(ctx, parts, opts))
    if not plain and not groups:
        raise TorchshError("missing_argument", "no parameters to optimize", "torch optim sgd $model --lr 0.1")
    return ([{"params": plain}] if plain else []) + groups


def _group(ctx, parts, opts):
    specs = {a.name: a for a in opts}
    group = {"params": []}
    for part in parts:
        if looks_like_handle(part):
            group["params"] += params_of(ctx, part)
            continue
        key, eq, text = part.partition("=")
        key = key.lstrip("-").replace("-", "_")
        if not eq:
            raise bad_argument("cannot read %r in a parameter group" % part, "write handles then key=value, e.g. "
                               "\"$head lr=0.1\"")
        if key not in specs:
            raise TorchshError("unknown_flag", "unknown group option %s" % key,
                               "valid options: %s" % " ".join(sorted(specs)))
        tok = tokens.from_word(text)
        if kinds.score(specs[key].kind, tok) == 0:
            raise bad_argument("%s=%s is not a %s" % (key, text, specs[key].type_text))
        group[key] = _pytorch_value(kinds.convert(specs[key].kind, tok, ctx))
    if not group["params"]:
        raise bad_argument("the group %r names no parameters" % " ".join(parts))
    return group


def params_of(ctx, handle):
    """A module's parameters, an optimizer's, or one tensor."""
    entry = ctx.registry.entry(handle, ("nn", "tensor", "optim"))
    if entry.kind == "nn":
        return list(entry.obj.parameters())
    if entry.kind == "optim":
        return [p for g in entry.obj.param_groups for p in g["params"]]
    return [entry.obj]


# -- using an optimizer -----------------------------------------------------------------------------
@verb("step(Optimizer optimizer) -> None", category="optim",
      writes=("optimizer",), form=verbforms.method("step", "optimizer"),
      examples=("m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
                "torch backward $(torch sum $(torch forward $m $(torch ones 2))); torch step $o",))
def step(ctx, optimizer):
    """optimizer.step(): update the parameters from their .grad (run backward first)."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise bad_argument("LBFGS re-evaluates the loss during its step", "use `torch train_step M OPT --loss … X Y`")
    memory.admit_first_step(ctx, optimizer, backward=False)
    optimizer.step()


@verb("optim.lr(Optimizer optimizer, float? value=None) -> Json", category="optim", writes=("optimizer",),
      no_form="a learning rate set by hand is not written yet",
      examples=("o=$(torch optim adam $(torch nn linear 2 1)); torch optim lr $o 0.01 && torch optim lr $o",))
def lr(ctx, optimizer, value=None):
    """Print the learning rate (one per group as a list when groups differ), or set every group's to VALUE."""
    if value is not None:
        if value < 0:
            raise bad_argument("learning rate must be >= 0, got %r" % value)
        for g in optimizer.param_groups:
            g["lr"] = value
        return None
    lrs = [_plain(g["lr"]) for g in optimizer.param_groups]
    return lrs[0] if len(set(lrs)) == 1 else lrs


def _plain(v):
    return v.item() if isinstance(v, torch.Tensor) else v


class OptimInfo(dict):
    def text(self):
        lines = ["%s  %d group(s)  %d parameter tensors  state: %d tensors, %d bytes" % (
            self["kind"], len(self["groups"]), sum(g["params"] for g in self["groups"]),
            self["state_tensors"], self["state_bytes"])]
        for i, g in enumerate(self["groups"]):
            opts = " ".join("%s=%s" % (k, v) for k, v in g["options"].items())
            lines.append("group %d: %d tensors, %d values  %s" % (i, g["params"], g["numel"], opts))
        return "\n".join(lines) + "\n"


@verb("optim.info(Optimizer optimizer) -> Json", category="optim",
      examples=("torch optim info $(torch optim sgd $(torch nn linear 2 1) --lr 0.1 --momentum 0.9)",), read_only=True)
def info(ctx, optimizer):
    """Kind, parameter groups with their hyperparameters, and the size of the optimizer's state."""
    groups = []
    for g in optimizer.param_groups:
        options = {k: _jsonable(v) for k, v in g.items() if k != "params" and k not in _NOT_OPTIONS}
        groups.append({"params": len(g["params"]), "numel": sum(p.numel() for p in g["params"]), "options": options})
    state = [t for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    return OptimInfo(kind=type(optimizer).__name__, groups=groups, state_tensors=len(state),
                     state_bytes=sum(t.numel() * t.element_size() for t in state))


def _jsonable(v):
    if isinstance(v, torch.Tensor):
        return v.tolist()
    if isinstance(v, tuple):
        return list(v)
    return v if v is None or isinstance(v, (bool, int, float, str, list)) else str(v)


@verb("optim.list() -> Json", category="optim", lockfree=True,
      examples=("torch optim list",), read_only=True)
def optim_list(ctx):
    """Every optimizer kind `torch optim KIND` builds, with its options."""
    return Table([{"kind": op.name[6:], "class": op.cls.__name__,
                   "options": Overload(args=op.overloads[0].args[1:]).params_text().replace("*, ", "", 1)}
                  for op in tables.built_by(ctx.table, "optim", "optim")],
                 ("kind", "options"))


# -- gradient clipping ----------------------------------------------------------------------------------
@verb("clip_grad_norm(Handle[] targets, *, float max_norm, float norm_type=2.0, bool error_if_nonfinite=False) -> Scalar",
      category="optim", writes=("targets",),
      form=verbforms.clip("clip_grad_norm_", ("max_norm", "norm_type", "error_if_nonfinite")),
      examples=("m=$(torch nn linear 2 1); torch backward $(torch sum $(torch forward $m $(torch ones 2))); "
                "torch clip_grad_norm $m --max_norm 1.0",))
def clip_grad_norm(ctx, targets, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """torch.nn.utils.clip_grad_norm_ over the parameters of models, optimizers or tensors; prints the total
    norm before clipping: if ‖g‖ > max_norm every gradient is scaled by max_norm / (‖g‖ + 1e-6)."""
    params = [p for h in targets for p in params_of(ctx, h)]
    total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type, error_if_nonfinite=error_if_nonfinite)
    return JsonText(number_text(total))


@verb("clip_grad_value(Handle[] targets, *, float clip_value) -> None", category="optim", writes=("targets",),
      form=verbforms.clip("clip_grad_value_", ("clip_value",)),
      examples=("m=$(torch nn linear 2 1); torch backward $(torch sum $(torch forward $m $(torch ones 2))); "
                "torch clip_grad_value $m --clip_value 0.5",))
def clip_grad_value(ctx, targets, clip_value):
    """torch.nn.utils.clip_grad_value_: clamp every gradient element into [-clip_value, clip_value]."""
    params = [p for h in targets for p in params_of(ctx, h)]
    torch.nn.utils.clip_grad_value_(params, clip_value)


def number_text(t):
    """A one-element tensor as the shortest text that reads back to the same value in its dtype."""
    if isinstance(t, torch.Tensor):
        v, narrow = t.item(), t.dtype in _NARROW_FLOATS  # item(): any one-element tensor, no graph
    else:
        v, narrow = t, False
    if v != v or v in _INFINITIES:
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    return str(np.float32(v)) if narrow else repr(v)


_NARROW_FLOATS = frozenset((torch.float32, torch.float16, torch.bfloat16))  # shortest text as a float32's
_INFINITIES = (float("inf"), float("-inf"))
