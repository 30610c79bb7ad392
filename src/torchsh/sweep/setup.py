"""What a `torch sweep` command asks for, checked before its job starts: the sweep's definition (new,
continued with --resume, or read from a joined study), its study and its --log folder's sweep.json.

The definition is what every worker of one study must share: the templates, the space, the training
options, the sampler, pruner and seed. A new sweep takes it from the flags (with the defaults below);
--resume and --join take it from the study, and a flag given with them must say the same (--trials may
grow on --resume).

--log DIR holds sweep.json (the definition, the study's name and storage, and the id of each worker that
ran here: how --resume knows which RUNNING trials were its own), study.journal (the study, unless
--storage puts it elsewhere) and one run folder per trial, trial_NNNN.
"""
import json
import os
import socket
import time

import torch

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument
from torchsh.sweep import space as spaces, study as studies
from torchsh.train.metrics.epoch import LOWER_IS_BETTER
from torchsh.vocab import dtype_name

DEFINING = ("model", "opt", "space", "trials", "loss", "loss_args", "epochs", "metrics", "monitor", "patience",
            "sampler", "pruner", "seed", "target_dtype")
DEFAULTS = {"trials": 10, "epochs": 1, "sampler": "tpe", "pruner": "median"}  # pruner: optuna.create_study's
SWEEP_FILE = "sweep.json"


def definition(o):
    """A new sweep's definition from its flags (o: the verb's arguments)."""
    for flag in ("model", "opt", "space"):
        if o[flag] is None:
            raise TorchshError("missing_argument", "torch sweep needs --%s" % flag,
                               "torch sweep --model \"sequential 'linear 4 {width}' relu 'linear {width} 3'\" "
                               "--opt 'adamw --lr {lr}' --space 'width: [8,16]; lr: loguniform(1e-4,1e-1)' --data $L")
    d = {key: _given(o, key) for key in DEFINING}
    d.update({k: v for k, v in DEFAULTS.items() if d[k] is None})
    if d["seed"] is None:  # drawn once, as a Loader's, and kept: every trial is repeatable alone
        d["seed"] = int(torch.randint(0, 2 ** 31 - 1, ()).item())
    d["monitor"] = d["monitor"] or ("val_loss" if o["val"] is not None else "loss")
    d["direction"] = "minimize" if d["monitor"].removeprefix("val_") in LOWER_IS_BETTER else "maximize"
    if d["trials"] < 1 or d["epochs"] < 1:
        raise bad_argument("--trials and --epochs must be at least 1")
    spaces.check_placeholders(spaces.parse(d["space"]), {"model": d["model"], "opt": d["opt"]})
    return d


def _given(o, key):
    value = o[key]
    if key == "target_dtype" and value is not None:
        return dtype_name(value)
    return value


def check_same(held, o, mode):
    """--resume/--join: flags given must say what the study holds."""
    for key in DEFINING:
        value = _given(o, key)
        if value is None or (key == "trials" and mode == "resume"):
            continue
        if value != held.get(key):
            raise TorchshError("state_mismatch", "--%s %s differs from the study's (%s)" % (key, value, held.get(key)),
                               "leave it out: --%s takes the study's definition" % mode)


def read_sweep_file(log):
    path = os.path.join(log, SWEEP_FILE)
    try:
        with open(path) as f:
            held = json.load(f)
    except FileNotFoundError:
        raise TorchshError("not_found", "%s holds no sweep to resume" % log,
                           "start one: torch sweep … --log %s" % log) from None
    except (OSError, ValueError) as e:
        raise TorchshError("state_mismatch", "cannot read %s: %s" % (path, e)) from None
    return held


def refuse_a_sweep_there(log):
    if os.path.exists(os.path.join(log, SWEEP_FILE)):
        raise TorchshError("run_exists", "%s holds a sweep" % log,
                           "continue it with --resume, or give another --log")


def joined_sweep_file(log, study):
    """What --log DIR's sweep.json holds when a --join worker writes there: None when DIR has none; refused
    when it is another study's (its workers and definition are not this one's)."""
    if not os.path.exists(os.path.join(log, SWEEP_FILE)):
        return None
    held = read_sweep_file(log)
    if held.get("study") != study:
        raise TorchshError("run_exists", "%s holds the sweep of study %s" % (log, held.get("study")),
                           "give another --log, or --join %s" % held.get("study"))
    return held


def write_sweep_file(log, record):
    os.makedirs(log, exist_ok=True)
    text = json.dumps(record, indent=1, default=str) + "\n"
    fileio.atomic_write(os.path.join(log, SWEEP_FILE), lambda tmp: _write(tmp, text))


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def worker_id():
    """This worker among a study's: host, daemon pid, start time."""
    return "%s:%d:%d" % (socket.gethostname(), os.getpid(), time.time_ns() // 1000)


def give_back_interrupted(study, workers):
    """A worker of this folder killed mid-trial left it RUNNING: told FAIL, its values enqueued again as a
    trial that repeats it (the next ask takes them). -> how many."""
    from torchsh.sweep.runner import REPEATS, WORKER
    o = studies.optuna()
    count = 0
    for t in study.get_trials(deepcopy=False, states=(o.trial.TrialState.RUNNING,)):
        if t.user_attrs.get(WORKER) in workers:
            study.tell(t.number, state=o.trial.TrialState.FAIL)
            study.enqueue_trial(dict(t.params), user_attrs={REPEATS: t.number})
            count += 1
    return count
