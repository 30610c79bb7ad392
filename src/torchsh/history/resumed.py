"""`fit --resume` in the history: whether the checkpoint it resumes from holds exactly what the daemon holds
already, noted before the run reads it (the run overwrites `last` as it goes).

When it does (a fit resumed in the daemon that ran the fit before it, nothing changed since), restoring it
changes nothing: the model, optimizer, scheduler, CPU generator and both loaders are as the checkpoint has
them, so the script writes the resumed run as its loop over the epochs left, from the step the checkpoint
records. When it does not (a fit resumed in a fresh daemon, examples/fit.sh), the note keeps the checkpoint's
tensors and metadata as the run read them (the run overwrites the file): the script restores the model,
optimizer, scheduler, CPU generator and loaders from them (restore_lines), then runs the same loop. A
checkpoint with CUDA generator states or a GradScaler is not kept: the script refuses that resume.
"""
import json
import os

import torch

from torchsh.formats import statefile as state_file, stfile
from torchsh.models import checkpoint


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
    noted = {"in_place": in_place, "progress": fit["progress"]}
    if not in_place and not fit["cuda_rng"] and not fit["scaler"]:
        noted["checkpoint"] = {"tensors": tensors, "meta": meta}
    return noted


def restore_lines(noted, a, r):
    """The script lines putting the objects where the noted checkpoint has them, as checkpoint.restore and
    train/resume.py do; a is the fit's arguments, r the writer."""
    tensors, meta = noted["checkpoint"]["tensors"], noted["checkpoint"]["meta"]
    fit = state_file.decode(meta["fit"], tensors)
    lines = ["# torch fit --resume: the checkpoint as the run read it (it has been overwritten since)",
             "%s.load_state_dict(%s)" % (r.lit(a["model"]), _literal(checkpoint.model_part(tensors), r))]
    for arg, part in (("optimizer", "optimizer"), ("sched", "scheduler")):
        if a.get(arg) is not None and meta.get(part):
            lines.append("%s.load_state_dict(%s)" % (r.lit(a[arg]), _literal(state_file.decode(meta[part]["state"], tensors), r)))
    lines.append("torch.set_rng_state(%s)" % r.tensor_literal(tensors["rng.cpu"]))
    for arg, key in (("loader", "loader"), ("val", "val_loader")):
        state = fit.get(key)
        if a.get(arg) is not None and state:
            r.helpers.add("_Loader")
            lines.append("%s.restore(%s, %d)" % (r.lit(a[arg]), r.tensor_literal(state["generator"]),
                                                 state["position"] if state["in_epoch"] else 0))
    return lines


def _literal(value, r):
    """A decoded state (dicts with any keys, lists, tuples, tensors, numbers) as Python source."""
    if isinstance(value, torch.Tensor):
        return r.tensor_literal(value)
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s: %s" % (r.lit(k), _literal(v, r)) for k, v in value.items())
    if isinstance(value, list):
        return "[%s]" % ", ".join(_literal(v, r) for v in value)
    if isinstance(value, tuple):
        return "(%s)" % "".join(_literal(v, r) + ", " for v in value)
    return r.lit(value)


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
