"""Optimizers' and schedulers' persistence. An optimizer: its class, defaults and groups, each parameter a
reference into a module taken along (`ref` + its name there) or to a held tensor; a scheduler: the class and
constructor values torchsh built it with (base.record). Both keep their state_dict as JSON state."""
import inspect

import torch

from torchsh.recipes.base import (Persistence, class_named, json_state, load_json_state, made, nested_recipe,
                                  not_portable, record)


def capture_optimizer(o, walk):
    where = {}
    for name, obj in walk.refs.items():   # modules first: a parameter is found as `ref` + its name in the module
        if isinstance(obj, torch.nn.Module):
            for pname, p in obj.named_parameters():
                where.setdefault(id(p), {"ref": name, "param": pname})
    for name, obj in walk.refs.items():
        if isinstance(obj, torch.Tensor):
            where.setdefault(id(obj), {"ref": name})
    groups = []
    for g in o.param_groups:
        missing = [p for p in g["params"] if id(p) not in where]
        if missing:
            raise not_portable("the %s optimizer updates %d parameter(s) of a module or tensor not taken along"
                               % (type(o).__name__, len(missing)), "copy or save its model together with it")
        groups.append({"params": [where[id(p)] for p in g["params"]],
                       "options": walk.value({k: v for k, v in g.items() if k != "params"}, refs=False)})
    return {"kind": "optim", "class": type(o).__name__, "defaults": walk.value(dict(o.defaults), refs=False),
            "groups": groups}


def build_optimizer(rec, walk):
    cls = class_named(torch.optim, rec["class"], torch.optim.Optimizer)

    def param(where):
        obj = walk.lookup(where["ref"])
        return obj.get_parameter(where["param"]) if "param" in where else obj
    groups = [dict(walk.value(g["options"]), params=[param(w) for w in g["params"]]) for g in rec["groups"]]
    accepted = inspect.signature(cls.__init__).parameters
    defaults = {k: v for k, v in walk.value(rec["defaults"]).items() if k in accepted}
    return cls(groups, **defaults)


def _optimizer_inside(o, walk):
    raise not_portable("a scheduler needs its optimizer taken along", "copy or save the optimizer with it")


def capture_scheduler(s, walk):
    cls_name, values = made(s, "scheduler")
    return {"kind": "sched", "class": cls_name, "args": walk.value(values)}


def build_scheduler(rec, walk):
    cls = class_named(torch.optim.lr_scheduler, rec["class"], torch.optim.lr_scheduler.LRScheduler)
    values = walk.value(rec["args"])
    return record(cls(**values), rec["class"], values)


OPTIMIZER = Persistence(capture_optimizer, build_optimizer, lambda o, skip: json_state(o), load_json_state,
                        inline=_optimizer_inside)
SCHEDULER = Persistence(capture_scheduler, build_scheduler, lambda s, skip: json_state(s), load_json_state,
                        inline=nested_recipe)
