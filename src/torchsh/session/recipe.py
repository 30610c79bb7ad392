"""Recipes: how to rebuild an object without its tensors (JSON), and the tensors that fill it back.

    rec = capture(obj, refs)          # JSON-able dict; never pickle
    new = build(rec, lookup)          # the same structure, fresh (uninitialised) values
    load_state(new, state_tensors(obj, refs))   # the values, bit for bit (safetensors-able tensors)

Kinds: modules built by torchsh's nn verbs (the class and constructor values recorded when built, see
`record`), optimizers (class, defaults, groups: each parameter as a reference into a module's named
parameters or to a tensor), schedulers (class and constructor values, recorded), datasets (datasets.py:
files, splits, transforms, tensors), loaders (dataset, options, seed; the position is state), tensors and
distributions. A module from `nn jit_load` (or anything built outside the verbs) has no recipe: capture
raises `not_portable`.

refs maps a name (a handle) to an object captured alongside: a sub-object found there by identity (a held
child module, the dataset a transform wraps, an optimizer's modules, a scheduler's optimizer) is written
{"ref": name} and `build` asks `lookup(name)` for the object built for it, so shared objects stay shared.
Build everything first, then load every state: a scheduler's constructor changes its optimizer's lr,
which the optimizer's state then sets back. `refs_of(rec)` names what a recipe needs built before it.

Non-tensor state (step counts, a scheduler's counters, a loader's position) travels in state_tensors too,
as UTF-8 JSON in a uint8 tensor under STATE_JSON, so one safetensors file holds an object's state.
"""
import inspect
import json
import weakref

import torch
import torch.distributions
import torch.utils.data
from torch.nn.parameter import is_lazy

from torchsh.data.loader import Loader
from torchsh.errors import TorchshError
from torchsh.session import datasets
from torchsh.session.state import STATE_JSON, load_state, state_tensors

__all__ = ["capture", "build", "state_tensors", "load_state", "record", "refs_of", "STATE_JSON", "not_portable"]
from torchsh.vocab import DTYPES, dtype_name

_MADE = weakref.WeakKeyDictionary()   # module or scheduler -> (class name, constructor values) as built


def not_portable(message, hint=None):
    return TorchshError("not_portable", message, hint)


def record(obj, class_name, values):
    """Remember how torchsh built obj (nn.construct, nn sequential, the sched builder): class and values.
    Values may hold objects (child modules, an optimizer); capture turns them into recipes or refs."""
    _MADE[obj] = (class_name, dict(values))
    return obj


# -- capture -------------------------------------------------------------------------------------
def capture(obj, refs=None):
    """A JSON-able dict that `build` turns back into an object like obj (without its values)."""
    ids = {id(o): name for name, o in (refs or {}).items()}
    return _capture(obj, ids, refs or {})


def _capture(obj, ids, refs):
    if isinstance(obj, torch.Tensor):
        if is_lazy(obj):
            raise not_portable("an uninitialized parameter of a lazy module has no shape or values yet",
                               "run the module once (`torch forward`), or save the module itself")
        return {"kind": "tensor", "shape": list(obj.shape), "dtype": dtype_name(obj.dtype), "device": str(obj.device),
                "requires_grad": obj.requires_grad, "graph": obj.grad_fn is not None}
    if isinstance(obj, torch.nn.Module):
        return _capture_module(obj, ids)
    if isinstance(obj, torch.optim.Optimizer):
        return _capture_optimizer(obj, refs)
    if isinstance(obj, torch.optim.lr_scheduler.LRScheduler):
        cls_name, values = _made(obj, "scheduler")
        return {"kind": "sched", "class": cls_name, "args": encode(values, ids)}
    if isinstance(obj, Loader):
        return {"kind": "loader", "dataset": encode(obj.dataset, ids), "batch_size": obj.batch_size,
                "shuffle": obj.shuffle, "drop_last": obj.drop_last, "seed": obj.seed, "num_workers": obj.num_workers}
    if isinstance(obj, torch.utils.data.Dataset):
        return datasets.capture(obj, lambda v: encode(v, ids))
    if isinstance(obj, torch.distributions.Distribution):
        return {"kind": "dist", "class": type(obj).__name__, "params": _dist_params(obj, ids)}
    if type(obj).__name__ == "Job":
        raise not_portable("a job is not saved (its model, optimizer and loader are, as they stand)",
                           "`torch job wait` first to save a finished run's state")
    raise not_portable("a %s cannot be saved or copied" % type(obj).__name__)


def _dist_params(d, ids):
    """The constructor arguments of a distribution: its parameters as given. probs and logits are both
    cached once used; the one given is the one `_param` is (Categorical, Bernoulli, …)."""
    given = {k: v for k, v in vars(d).items() if k in d.arg_constraints}
    if "probs" in given and "logits" in given and hasattr(d, "_param"):
        given = {k: v for k, v in given.items() if k not in ("probs", "logits") or v is d._param}
    return {k: encode(v, ids) for k, v in given.items()}


def _made(obj, what):
    made = _MADE.get(obj)
    if made is None and isinstance(obj, torch.jit.ScriptModule):
        raise not_portable("a TorchScript module (nn jit_load) has no recipe: its archive holds code, not a recipe",
                           "load the same file with `torch nn jit_load` where it is needed")
    if made is None:
        raise not_portable("this %s (%s) was not built by torchsh's verbs, so there is no recipe to rebuild it"
                           % (what, type(obj).__name__),
                           "a TorchScript module (nn jit_load) stays in its daemon: load its file there")
    return made


def _capture_module(m, ids):
    cls_name, values = _made(m, "module")
    return {"kind": "nn", "class": cls_name, "args": encode(values, ids),
            "eval": [n for n, x in m.named_modules() if not x.training],
            "frozen": [n for n, p in m.named_parameters() if not p.requires_grad],
            "placement": {n: [dtype_name(t.dtype), str(t.device)] for n, t in _named_tensors(m) if not is_lazy(t)}}


def _named_tensors(m):
    return list(m.named_parameters()) + list(m.named_buffers())


def _capture_optimizer(o, refs):
    where = {}
    for name, obj in refs.items():   # modules first: a parameter is found as `ref` + its name in the module
        if isinstance(obj, torch.nn.Module):
            for pname, p in obj.named_parameters():
                where.setdefault(id(p), {"ref": name, "param": pname})
    for name, obj in refs.items():
        if isinstance(obj, torch.Tensor):
            where.setdefault(id(obj), {"ref": name})
    groups = []
    for g in o.param_groups:
        missing = [p for p in g["params"] if id(p) not in where]
        if missing:
            raise not_portable("the %s optimizer updates %d parameter(s) of a module or tensor not taken along"
                               % (type(o).__name__, len(missing)), "copy or save its model together with it")
        groups.append({"params": [where[id(p)] for p in g["params"]],
                       "options": encode({k: v for k, v in g.items() if k != "params"}, {})})
    return {"kind": "optim", "class": type(o).__name__, "defaults": encode(dict(o.defaults), {}), "groups": groups}


# -- values as JSON --------------------------------------------------------------------------------
_OBJECTS = (torch.Tensor, torch.nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler,
            torch.utils.data.Dataset, Loader)


def encode(v, ids):
    """A constructor value as JSON: objects in ids as {"ref"}, others as their own recipe (tensors inline)."""
    if isinstance(v, _OBJECTS) and id(v) in ids:
        return {"ref": ids[id(v)]}
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and abs(v) != float("inf") else {"float": repr(v)}
    if isinstance(v, (list, tuple)):
        items = [encode(x, ids) for x in v]
        return items if isinstance(v, list) else {"tuple": items}
    if isinstance(v, dict):
        return {"dict": [[encode(k, ids), encode(x, ids)] for k, x in v.items()]}
    if isinstance(v, torch.dtype):
        return {"dtype": dtype_name(v)}
    if isinstance(v, torch.device):
        return {"device": str(v)}
    if isinstance(v, torch.Tensor):
        t = v.detach()
        return {"tensor": t.cpu().tolist(), "dtype": dtype_name(t.dtype), "device": str(t.device)}
    if isinstance(v, torch.optim.Optimizer):
        raise not_portable("a scheduler needs its optimizer taken along", "copy or save the optimizer with it")
    if isinstance(v, _OBJECTS):
        return {"object": _capture(v, ids, {})}
    raise not_portable("a %s value cannot be written without pickle" % type(v).__name__)


def decode(v, lookup):
    if isinstance(v, list):
        return [decode(x, lookup) for x in v]
    if not isinstance(v, dict):
        return v
    if "ref" in v:
        return lookup(v["ref"])
    if "float" in v:
        return float(v["float"])
    if "tuple" in v:
        return tuple(decode(x, lookup) for x in v["tuple"])
    if "dict" in v:
        return {decode(k, lookup): decode(x, lookup) for k, x in v["dict"]}
    if "dtype" in v and "tensor" not in v:
        return DTYPES[v["dtype"]]
    if "device" in v and "tensor" not in v:
        return torch.device(v["device"])
    if "tensor" in v:
        return torch.tensor(v["tensor"], dtype=DTYPES[v["dtype"]], device=v["device"])
    if "object" in v:
        return build(v["object"], lookup)
    raise not_portable("unreadable recipe value %s" % json.dumps(v)[:80])


def refs_of(rec):
    """The names a recipe refers to (what must be built before it)."""
    out = set()

    def walk(v):
        if isinstance(v, dict):
            if set(v) == {"ref"} or (set(v) == {"ref", "param"}):
                out.add(v["ref"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(rec)
    return out


# -- build -----------------------------------------------------------------------------------------
def build(rec, lookup):
    """An object from its recipe; lookup(name) (or lookup[name]) gives the object already built for a {"ref": name}."""
    if isinstance(lookup, dict):
        lookup = lookup.__getitem__
    kind = rec.get("kind")
    if kind == "tensor":
        t = torch.empty(rec["shape"], dtype=DTYPES[rec["dtype"]], device=rec["device"])
        return t.requires_grad_(rec["requires_grad"] and not rec.get("graph"))  # a graph comes back detached
    if kind == "nn":
        return _build_module(rec, lookup)
    if kind == "optim":
        return _build_optimizer(rec, lookup)
    if kind == "sched":
        cls = _class(torch.optim.lr_scheduler, rec["class"], torch.optim.lr_scheduler.LRScheduler)
        values = decode(rec["args"], lookup)
        return record(cls(**values), rec["class"], values)
    if kind == "loader":
        return Loader(decode(rec["dataset"], lookup), batch_size=rec["batch_size"], shuffle=rec["shuffle"],
                      drop_last=rec["drop_last"], seed=rec["seed"], num_workers=rec["num_workers"])
    if kind == "data":
        return datasets.build(rec, lambda v: decode(v, lookup))
    if kind == "dist":
        cls = _class(torch.distributions, rec["class"], torch.distributions.Distribution)
        return cls(**{k: decode(v, lookup) for k, v in rec["params"].items()})
    raise not_portable("unknown recipe kind %r" % kind)


def _class(namespace, name, base):
    cls = getattr(namespace, name, None)
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise not_portable("%s is not a %s class of this PyTorch" % (name, base.__name__))
    return cls


def _build_module(rec, lookup):
    cls = _class(torch.nn, rec["class"], torch.nn.Module)
    values = decode(rec["args"], lookup)
    m = cls(*values["modules"]) if rec["class"] == "Sequential" else cls(**values)
    record(m, rec["class"], values)
    _place(m, rec.get("placement", {}))
    frozen, in_eval = set(rec.get("frozen", ())), set(rec.get("eval", ()))
    for n, p in m.named_parameters():
        if not is_lazy(p):   # a lazy module (LazyLinear) gets its parameters from its state
            p.requires_grad_(n not in frozen)
    for n, x in m.named_modules():
        x.training = n not in in_eval
    return m


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


def _build_optimizer(rec, lookup):
    cls = _class(torch.optim, rec["class"], torch.optim.Optimizer)

    def param(where):
        obj = lookup(where["ref"])
        return obj.get_parameter(where["param"]) if "param" in where else obj
    groups = [dict(decode(g["options"], lookup), params=[param(w) for w in g["params"]]) for g in rec["groups"]]
    accepted = inspect.signature(cls.__init__).parameters
    defaults = {k: v for k, v in decode(rec["defaults"], lookup).items() if k in accepted}
    return cls(groups, **defaults)
