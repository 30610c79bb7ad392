"""`torch sweep` (issue 26): 32 trials of a small MLP, 3 epochs each, against the two ways a user would do it
otherwise, in the same run.

Data: 2,048 x F float32 inputs and 10-class labels (seed 0), batch 64 shuffled (seed 0); a 512-sample
validation loader. Model: an F-64-10 MLP, F = 32 (the small MLP of the issue's goal) and F = 784 (MNIST's
width: its first layer's products and AdamW's step over 32 stacked copies outweigh the per-step overhead
a vectorised sweep saves, so it gains less); AdamW with lr ~ loguniform(1e-4, 1e-1) and weight_decay ~
loguniform(1e-6, 1e-2); random sampler (seed 0), no pruning, so every way trains the same 32 trials in full.

  (a) `torch sweep … --trials 32` with its default --vectorize (trials as one vectorised model), client
      spawn -> exit (the daemon warm, its loaders made);
  (b) the same with --vectorize 32 (all 32 trials as one model);
  (c) reference 1: 32 `torch fit` runs in a bash loop (model, optimizer, fit per trial, as a script
      without `torch sweep` would write it), the lr and weight_decay values (a) drew; target (a) >= 5x;
  (d) reference 2: the same Optuna study written in Python (optuna.create_study, an objective with the
      DataLoader and PyTorch's loop, study.optimize(n_trials=32)) in a process of its own, timed around
      optimize() only (its imports not counted); target (a) >= 1x.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import Daemon, spread, value_row  # noqa: E402

N, VAL, CLASSES, BATCH, TRIALS, EPOCHS = 2048, 512, 10, 64, 32, 3
WIDTHS = (32, 784)  # input features of the MLP F-64-10
MODEL = "sequential 'linear %d 64' relu 'linear 64 10'"
SPACE = "lr: loguniform(1e-4,1e-1); wd: loguniform(1e-6,1e-2)"
TARGET_FITS, TARGET_PYTHON = 5.0, 1.0


def make_data(folder, features):
    import numpy as np
    rng = np.random.default_rng(0)
    paths = {}
    for name, n in (("train", N), ("val", VAL)):
        paths[name] = tuple(os.path.join(folder, "%s-%d-%s.npy" % (name, features, xy)) for xy in "xy")
        np.save(paths[name][0], rng.standard_normal((n, features), dtype=np.float32))
        np.save(paths[name][1], rng.integers(0, CLASSES, n, dtype=np.int64))
    return paths


def loaders(daemon, paths):
    train = daemon.cli("data", "open", *paths["train"])
    val = daemon.cli("data", "open", *paths["val"])
    return (daemon.cli("data", "loader", train, "--batch_size", str(BATCH), "--shuffle", "--seed", "0"),
            daemon.cli("data", "loader", val, "--batch_size", "256"))


def sweep_seconds(daemon, loader, val, vectorize, features):
    """(seconds, rows) of one `torch sweep` command."""
    argv = ["sweep", "--model", MODEL % features, "--opt", "adamw --lr {lr} --weight_decay {wd}", "--space", SPACE,
            "--trials", str(TRIALS), "--epochs", str(EPOCHS), "--data", loader, "--val", val,
            "--loss", "cross_entropy", "--sampler", "random", "--pruner", "none", "--seed", "0", "--json"]
    if vectorize is not None:
        argv += ["--vectorize", str(vectorize)]
    t0 = time.perf_counter()
    out = daemon.cli(*argv)
    return time.perf_counter() - t0, [json.loads(line) for line in out.splitlines()]


def fits_seconds(daemon, loader, val, rows, features):
    """32 `torch fit` runs in one bash script (the fast bash function), each trial's values."""
    lines = ['eval "$(torch init bash)"']
    for r in rows:
        lines.append("m=$(torch nn %s); o=$(torch optim adamw $m --lr %r --weight_decay %r); "
                     "torch fit $m $o %s --val %s --loss cross_entropy --epochs %d >/dev/null; torch free $m $o"
                     % (MODEL % features, r["lr"], r["wd"], loader, val, EPOCHS))
    t0 = time.perf_counter()
    p = subprocess.run(["bash", "-c", "\n".join(lines)], env=daemon.env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("the fit loop failed: %s" % p.stderr.strip()[-400:])
    return time.perf_counter() - t0


PYTHON_STUDY = r'''
import json, sys, time
import numpy as np, optuna, torch
import torch.nn.functional as F
optuna.logging.set_verbosity(optuna.logging.WARNING)
paths = json.loads(sys.argv[1])
def dataset(name):
    return torch.utils.data.TensorDataset(*(torch.from_numpy(np.load(p)) for p in paths[name]))
train, val = dataset("train"), dataset("val")
def objective(trial):
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    wd = trial.suggest_float("wd", 1e-6, 1e-2, log=True)
    model = torch.nn.Sequential(torch.nn.Linear(paths["features"], 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd)
    loader = torch.utils.data.DataLoader(train, batch_size=%(batch)d, shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    best = float("inf")
    for epoch in range(%(epochs)d):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            total = sum(F.cross_entropy(model(x), y, reduction="sum").item()
                        for x, y in torch.utils.data.DataLoader(val, batch_size=256))
        best = min(best, total / len(val))
    return best
study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0), pruner=optuna.pruners.NopPruner())
t0 = time.perf_counter()
study.optimize(objective, n_trials=%(trials)d)
print(time.perf_counter() - t0)
''' % {"batch": BATCH, "epochs": EPOCHS, "trials": TRIALS}


def python_seconds(paths, features):
    out = subprocess.run([sys.executable, "-c", PYTHON_STUDY, json.dumps(dict(paths, features=features))], capture_output=True, text=True,
                         check=True).stdout
    return float(out.strip().splitlines()[-1])


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def run(quick=False):
    rounds = 1 if quick else 3
    rows = []
    with Daemon() as daemon:
        for features in WIDTHS:
            rows += _rows(daemon, features, rounds)
    return rows


def _rows(daemon, features, rounds):
    paths = make_data(daemon.folder, features)
    loader, val = loaders(daemon, paths)
    sweeps, wide, fits, pythons = [], [], [], []
    sweep_seconds(daemon, loader, val, None, features)  # warm: Optuna's import, vmap's first trace (once a daemon)
    for _ in range(rounds):
        seconds, rows = sweep_seconds(daemon, loader, val, None, features)
        sweeps.append(seconds)
        wide.append(sweep_seconds(daemon, loader, val, TRIALS, features)[0])
        fits.append(fits_seconds(daemon, loader, val, rows, features))
        pythons.append(python_seconds(paths, features))
    s, w, f, p = median(sweeps), median(wide), median(fits), median(pythons)
    what = "%d trials x %d epochs, MLP %d-64-10 AdamW, 2,048 samples b%d" % (TRIALS, EPOCHS, features, BATCH)
    return [value_row("torch sweep (default --vectorize), %s: seconds" % what, s, "s",
                      "(c) 32 torch fit runs in a bash loop", f, ratio=f / s, target=">= %gx" % TARGET_FITS,
                      met=f / s >= TARGET_FITS, noise=spread(fits)),
            value_row("torch sweep --vectorize 32, %s: seconds" % what, w, "s",
                      "(c) 32 torch fit runs in a bash loop", f, ratio=f / w, noise=spread(fits)),
            value_row("torch sweep (default --vectorize), %s: seconds" % what, s, "s",
                      "(d) the Optuna study in Python, optimize() only", p, ratio=p / s,
                      target=">= %gx" % TARGET_PYTHON, met=p / s >= TARGET_PYTHON, noise=spread(pythons))]


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print("%-100s %8.2f %-3s ref %8.2f  speed-up %.2fx  %s" % (
            r["name"], r["value"], r["unit"], r["ref_value"], r["ratio"], r.get("target") or ""))
