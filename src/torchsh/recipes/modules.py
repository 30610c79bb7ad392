"""A module's persistence: the class and constructor values torchsh built it with (base.record; a model
`model open` made: its source, a file's real path or a library's name, and --args), which
sub-modules are in eval mode, which parameters are frozen, each tensor's dtype and device, and what its
data stands for (its card, contract/card.py: inputs, preprocessing, task, classes, what `fit` recorded); its
state_dict and its parameters' grads as its state. A module built outside the verbs (`nn jit_load`) has
no recipe: capturing it is not_portable."""
import torch
from torch.nn.parameter import is_lazy

from torchsh.contract import card as cards
from torchsh.formats import statefile as nested
from torchsh.formats.stfile import live
from torchsh.recipes import modelopen
from torchsh.recipes.base import Persistence, class_named, has_data, made, nested_recipe, record
from torchsh.vocab import DTYPES, dtype_name


def capture(m, walk):
    cls_name, values = made(m, "module")
    rec = {"kind": "nn", "class": cls_name, "args": walk.value(values),
           "eval": [n for n, x in m.named_modules() if not x.training],
           "frozen": [n for n, p in m.named_parameters() if not p.requires_grad],
           "placement": {n: [dtype_name(t.dtype), str(t.device)] for n, t in _named_tensors(m) if not is_lazy(t)}}
    if cards.of_model(m):
        rec[cards.STORED_KEY] = cards.of_model(m)  # plain JSON values: what predict, serve and export read
    return rec


def build(rec, walk):
    values = walk.value(rec["args"])
    if rec["class"] == modelopen.RECIPE_CLASS:   # `model open`: its file or library builds it again
        m = modelopen.reopen(values["source"], values["args"])
    else:
        cls = class_named(torch.nn, rec["class"], torch.nn.Module)
        m = cls(*values["modules"]) if rec["class"] == "Sequential" else cls(**values)
    record(m, rec["class"], values)
    _place(m, rec.get("placement", {}))
    frozen, in_eval = set(rec.get("frozen", ())), set(rec.get("eval", ()))
    for n, p in m.named_parameters():
        if not is_lazy(p):   # a lazy module (LazyLinear) gets its parameters from its state
            p.requires_grad_(n not in frozen)
    for n, x in m.named_modules():
        x.training = n not in in_eval
    cards.attach(m, cards.from_stored(rec))  # a session saved before cards: its "data"
    return m


def _named_tensors(m):
    return list(m.named_parameters()) + list(m.named_buffers())


def _place(m, placement):
    """Move parameters and buffers to the dtype and device they had (`nn to` after the build), in place
    as Module.to does, so parameters keep their identity."""
    with torch.no_grad():
        for n, t in _named_tensors(m):
            want = placement.get(n)
            if want is None or is_lazy(t) or [dtype_name(t.dtype), str(t.device)] == want:
                continue
            moved = t.to(device=want[1], dtype=DTYPES[want[0]])
            if isinstance(t, torch.nn.Parameter):
                t.data = moved
            else:
                owner, _, leaf = n.rpartition(".")
                m.get_submodule(owner)._buffers[leaf] = moved


def state(m, skip):
    out = {"model." + k: live(v) for k, v in m.state_dict().items() if has_data(v)}
    out.update({"grad." + n: live(p.grad) for n, p in m.named_parameters() if p.grad is not None and has_data(p.grad)})
    return out


def load(m, values):
    weights = {k[6:]: values[k] for k in values if k.startswith("model.")}  # a session file reads each once
    if not all(has_data(t) for _, t in _named_tensors(m)):
        m.load_state_dict(weights, strict=False)
    else:
        nested.load_model(m, weights, "saved state")
    for n, p in m.named_parameters():
        g = values.get("grad." + n)
        p.grad = g.to(device=p.device, dtype=p.dtype) if g is not None else None


def part(m, name):
    params = dict(m.named_parameters())
    return params[name] if name in params else m.get_buffer(name)


MODULE = Persistence(capture, build, state, load, inline=nested_recipe, parts=_named_tensors, part=part)
