"""The run's spec folder of `fit --nproc_per_node N`: what the daemon hands to the ranks, and what rank 0
hands back. JSON and safetensors only, never pickle; the folder is private (0700, mkdtemp).

    spec.json           the objects' recipes (session/recipe.py), every fit option, the launch options,
                        the daemon's pid, where the run starts (a resumed run's progress and loaders)
    state.safetensors   the objects' values: NAME/KEY from recipe.state_tensors, the CPU RNG, the resumed
                        run's tensors (fit.*)
    events.jsonl        rank 0's progress events, one JSON object a line (the daemon's job tails it)
    stop                made by the daemon: the ranks stop, resumably, at the next optimizer step
    result.safetensors  rank 0's finished state: a `fit` checkpoint (train/resume.py), so the daemon loads it
    result.json         rank 0's epoch rows and where the run ended
    rank-R.json         rank R's failure (code, message, hint); failure.json: the launcher's verdict
"""
import json
import os

import torch

from torchsh.formats import statefile as state_file, stfile
from torchsh.session import recipe

FORMAT = "torchsh-fit-spec-1"
NAMES = ("model", "optimizer", "sched", "loader", "val")  # in build order: each needs only earlier ones


def path(folder, name):
    return os.path.join(folder, name)


def write(folder, objects, fit_options, launch, start):
    """objects: name -> object (None left out); start: {"loader_epoch", "resumed": fit part or None, …}."""
    objects = {k: v for k, v in objects.items() if v is not None}
    tensors = {"rng.cpu": torch.get_rng_state()}
    recipes = {}
    for name, obj in objects.items():
        recipes[name] = recipe.capture(obj, objects)
        tensors.update({"%s/%s" % (name, k): v for k, v in recipe.state_tensors(obj, objects).items()})
    start = dict(start, resumed=state_file.encode(start.get("resumed"), "fit", tensors))
    fit_options = dict(fit_options, loss_args=state_file.encode(fit_options["loss_args"], "loss_args", tensors))
    spec = {"format": FORMAT, "objects": recipes, "fit": fit_options, "launch": launch, "start": start,
            "daemon_pid": os.getpid()}
    stfile.write(path(folder, "state.safetensors"), tensors)
    write_json(path(folder, "spec.json"), spec)


def write_json(file, value):
    from torchsh import fileio
    text = json.dumps(value, allow_nan=True)
    fileio.atomic_write(file, lambda tmp: _write_text(tmp, text))


def _write_text(file, text):
    with open(file, "w") as f:
        f.write(text)


def read_json(file):
    with open(file) as f:
        return json.load(f)


def read(folder):
    """(spec, tensors) as the daemon wrote them; the resumed fit part decoded."""
    spec = read_json(path(folder, "spec.json"))
    if spec.get("format") != FORMAT:
        raise ValueError("%s is not a torchsh fit spec" % folder)
    tensors, _ = stfile.read(path(folder, "state.safetensors"))
    spec["start"]["resumed"] = state_file.decode(spec["start"]["resumed"], tensors)
    spec["fit"]["loss_args"] = state_file.decode(spec["fit"]["loss_args"], tensors)  # --loss_args' weight: a tensor
    return spec, tensors


def values(tensors, name):
    """NAME's state tensors, as recipe.load_state takes them."""
    prefix = name + "/"
    return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
