"""`fit --resume` in the history: whether the checkpoint it resumes from holds exactly what the daemon holds
already, noted before the run reads it (the run overwrites `last` as it goes).

When it does (a fit resumed in the daemon that ran the fit before it, nothing changed since), restoring it
changes nothing: the model, optimizer, scheduler, CPU generator and both loaders are as the checkpoint has
them, so the script writes the resumed run as its loop over the epochs left, from the step the checkpoint
records. A checkpoint from another daemon or an earlier point holds state the script cannot make: refused.
"""
import json
import os

import torch

from torchsh.classes import state as state_file
from torchsh.formats import stfile
from torchsh.train import checkpoint


def note(values):
    """{"fresh": True} when --resume auto finds no checkpoint (a fresh run); else {"in_place", "progress"}."""
    path = values.get("resume")
    if path == "auto":
        if not isinstance(values.get("log"), str):
            return None
        path = os.path.join(values["log"], "last.safetensors")
        if not os.path.lexists(path):
            return {"fresh": True}
    try:
        tensors, meta = stfile.read(path)
        fit = state_file.decode(meta["fit"], tensors)
        own, own_meta = checkpoint.capture(values["model"], values["optimizer"], values.get("sched"))
    except Exception:  # unreadable or not a fit checkpoint: the run refuses it; the script refuses it too
        return {"in_place": False}
    val = values.get("val")
    in_place = (_same(tensors, own, ("model.", "optim.", "sched.", "rng.cpu"))
                and all(_plain(meta.get(k)) == _plain(own_meta.get(k)) for k in ("optimizer", "scheduler"))
                and _equal(fit["loader"], values["loader"].state_dict())
                and _equal(fit["val_loader"], val.state_dict() if val is not None and fit["val_loader"] else None)
                and not fit["cuda_rng"] and not fit["scaler"])
    return {"in_place": in_place, "progress": fit["progress"]}


def _same(saved, own, prefixes):
    pick = lambda d: {k: v for k, v in d.items() if k.startswith(prefixes)}
    return _equal(pick(saved), pick(own))


def _plain(value):
    return json.loads(json.dumps(value))  # tuples as lists, as the file's JSON has them


def _equal(a, b):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype \
            and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b
