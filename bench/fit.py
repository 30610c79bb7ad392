"""`torch fit` against the same loop in Python, and the `data next` + `train_step` bash loop (issue 13).

Data: a 60,000 x 784 float32 .npy and 60,000 int64 labels, made here (seed 0) in the bench daemon's folder.
Model: MLP 784-512-512-10, AdamW(lr=1e-3), cross_entropy, batch 256, shuffled with seed 0, no workers.

  (a) `torch fit M O L --loss cross_entropy` over `torch data open x.npy y.npy` (memory-mapped): samples/s
      of one epoch, against (c).
  (b) `while b=$(torch data next $L); do torch train_step $M $O $b …; done` in bash with the fast path:
      per-step ms against (c)'s per-step ms (the difference is the shell loop's overhead per step).
  (c) the reference: the same epoch in Python in a process of its own (not this bench's: its OpenMP
      threads would share the cores with the daemon's), over the arrays as a Python user loads them
      (np.load, TensorDataset) and PyTorch's DataLoader with the same settings.

Subject and reference alternate, ROUNDS times; the row's figures are medians over rounds. Target (a):
samples/s >= 0.95x the reference's.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import Daemon, spread, value_row  # noqa: E402

N, FEATURES, CLASSES, BATCH = 60000, 784, 10, 256
FIT_TARGET = 0.95
MLP = ("linear 784 512", "relu", "linear 512 512", "relu", "linear 512 10")


def make_data(folder):
    import numpy as np
    rng = np.random.default_rng(0)
    x, y = os.path.join(folder, "x.npy"), os.path.join(folder, "y.npy")
    np.save(x, rng.standard_normal((N, FEATURES), dtype=np.float32))
    np.save(y, rng.integers(0, CLASSES, N, dtype=np.int64))
    return x, y


def reference_epoch(x_path, y_path, steps=None):
    """One epoch (or `steps` batches) of the Python loop: (seconds, samples, per-step ms list)."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.from_numpy(np.load(x_path)), torch.from_numpy(np.load(y_path)))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    samples, per_step = 0, []
    t0 = time.perf_counter()
    for i, (xb, yb) in enumerate(loader):
        if steps is not None and i == steps:
            break
        s0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
        per_step.append((time.perf_counter() - s0) * 1e3)
        samples += len(xb)
    return time.perf_counter() - t0, samples, per_step


def reference(x_path, y_path, steps=None):
    """reference_epoch in a fresh process."""
    code = ("import json, sys; sys.path.insert(0, %r); from bench.fit import reference_epoch; "
            "print(json.dumps(reference_epoch(%r, %r, %r)))"
            % (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), x_path, y_path, steps))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def handles(daemon, x_path, y_path):
    d = daemon.cli("data", "open", x_path, y_path)
    loader = daemon.cli("data", "loader", d, "--batch_size", str(BATCH), "--shuffle", "--seed", "0")
    daemon.cli("manual_seed", "0")
    model = daemon.cli("nn", "sequential", *MLP)
    opt = daemon.cli("optim", "adamw", model, "--lr", "0.001")
    return model, opt, loader


def fit_epoch(daemon, x_path, y_path):
    model, opt, loader = handles(daemon, x_path, y_path)
    t0 = time.perf_counter()
    daemon.cli("fit", model, opt, loader, "--loss", "cross_entropy", "--epochs", "1", "--json")
    return time.perf_counter() - t0


def bash_loop_steps(daemon, x_path, y_path, steps):
    """Per-step ms of the data next + train_step loop in one bash with the fast path."""
    model, opt, loader = handles(daemon, x_path, y_path)
    times = os.path.join(daemon.folder, "loop-times")
    script = ('unset TORCHSH_TTL; eval "$(torch init bash)"\n: > {t}\n'
              'for i in $(seq {n}); do t0=$EPOCHREALTIME; b=$(torch data next {l}) || break; '
              'torch train_step {m} {o} $b --loss cross_entropy >/dev/null; torch free $b; t1=$EPOCHREALTIME; '
              'echo "$t0 $t1" >> {t}; done').format(t=times, n=steps, l=loader, m=model, o=opt)
    p = subprocess.run(["bash", "-c", script], env=daemon.env, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True)
    if p.returncode:
        raise RuntimeError("bash loop failed: %s" % p.stderr.strip()[-400:])
    with open(times) as f:
        return [(float(b) - float(a)) * 1e3 for a, b in (ln.split() for ln in f if ln.strip())]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def run(quick=False):
    rounds, steps = (1, 20) if quick else (3, 60)
    with Daemon() as daemon:
        x_path, y_path = make_data(daemon.folder)
        fit_rates, ref_rates, loop_ms, ref_ms = [], [], [], []
        for _ in range(rounds):
            fit_rates.append(N / fit_epoch(daemon, x_path, y_path))
            seconds, samples, _ = reference(x_path, y_path)
            ref_rates.append(samples / seconds)
            loop_ms.append(median(bash_loop_steps(daemon, x_path, y_path, steps)))
            ref_ms.append(median(reference(x_path, y_path, steps)[2]))
    fit_rate, ref_rate = median(fit_rates), median(ref_rates)
    rows = [value_row("fit MLP 784-512-512-10 b256 AdamW, 60,000 x 784 .npy (memory-mapped): one epoch",
                      fit_rate, "samples/s", "(c) the same epoch in Python, own process", ref_rate,
                      target=">= %gx" % FIT_TARGET, met=fit_rate / ref_rate >= FIT_TARGET, noise=spread(ref_rates)),
            value_row("data next + train_step bash loop, fast path: ms per step", median(loop_ms), "ms",
                      "(c) the Python step alone", median(ref_ms), noise=spread(ref_ms),
                      note="overhead per step %.2f ms" % (median(loop_ms) - median(ref_ms)))]
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print("%-100s %10.2f %-9s ref %10.2f  ratio %.3f  %s %s" % (
            r["name"], r["value"], r["unit"], r["ref_value"], r["ratio"], r.get("target") or "", r.get("note", "")))
