"""The data and the study the sweep tests share (tests/e2e/test_sweep*.py): X and Y (96 rows, 3 classes),
the model and `torch sweep` line with their placeholders, `loaders` (the script lines that make $L and $V),
and `journal` (the study as Python's optuna reads it back)."""
import json
import os

import optuna
import torch
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

X = torch.randn(96, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (96,), generator=torch.Generator().manual_seed(2))
MODEL = "sequential 'linear 4 {width}' relu 'linear {width} 3'"
LOADERS = ("L=$(torch data loader $(torch data tensors {x} {y}) --batch_size {batch} --shuffle --seed 5); "
           "V=$(torch data loader $(torch data tensors {x} {y}) --batch_size 48 --seed 6); ")
SWEEP = ("torch sweep --model \"%s\" --opt 'adam --lr {lr}' --data $L --val $V --loss cross_entropy " % MODEL)


def loaders(shell, batch=16, x=X, y=Y):
    """The script lines that make $L and $V on the daemon `shell` talks to (the data goes by file)."""
    sh = getattr(shell, "sh", shell)
    paths = []
    for t in (x, y):
        paths.append(sh.tmp("data.pt"))
        torch.save(t, paths[-1])
    return LOADERS.format(x="$(torch load %s)" % paths[0], y="$(torch load %s)" % paths[1], batch=batch)


def journal(log):
    """The study as Python's optuna reads it: named in sweep.json (the --log folder's name by default)."""
    with open(os.path.join(log, "sweep.json")) as f:
        name = json.load(f)["study"]
    assert name == os.path.basename(log)
    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(os.path.join(log, "study.journal"))))
