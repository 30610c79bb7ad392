"""`torch runs ls` over 1,000 run folders: spawn -> exit of the client, target <= 1 s.

The folders are generated as `torch fit --log` writes them (run.json, metrics.jsonl with 200 step rows
and 5 epoch rows, an empty last.safetensors), with learning rates that differ, so the listing reads every
run.json and metrics.jsonl and finds a differing column. Reference: `ls -R` of the same tree (the floor
of walking it).
"""
import json
import os
import shutil
import tempfile

from bench.common import CLIENT, interleaved, row, spawn_ms

RUNS, TARGET_S = 1000, 1.0


def make_runs(parent, count=RUNS, steps=200, epochs=5):
    """`count` finished runs under parent/sweep/version_N, as train/logs/logdir.py writes them."""
    for n in range(count):
        folder = os.path.join(parent, "sweep", "version_%d" % n)
        os.makedirs(folder)
        lr = 0.1 / (1 + n % 10)
        record = {"command": "torch fit MODEL OPT LOADER --loss mse_loss --epochs %d --log %s" % (epochs, folder),
                  "versions": {"torchsh": "0", "torch": "2", "python": "3"}, "seeds": {"loader": n},
                  "model": "Linear(in_features=2, out_features=1, bias=True)",
                  "optimizer": {"type": "SGD", "param_groups": [{"lr": lr, "momentum": 0.9}]},
                  "loader": {"dataset": "TensorDataset", "length": 6400, "batch_size": 32, "seed": n}}
        with open(os.path.join(folder, "run.json"), "w") as f:
            json.dump(record, f, indent=1)
        lines, per_epoch = [], steps // epochs
        for step in range(1, steps + 1):
            epoch = (step - 1) // per_epoch + 1
            lines.append({"kind": "step", "epoch": epoch, "step": step, "loss": 1.0 / step, "lr": lr, "seconds": 0.01})
            if step % per_epoch == 0:
                lines.append({"kind": "epoch", "epoch": epoch, "step": step, "loss": 1.0 / step, "lr": lr, "seconds": 0.5})
        with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in lines))
        open(os.path.join(folder, "last.safetensors"), "w").close()


def run(daemon, quick=False):
    parent = tempfile.mkdtemp(prefix="tshruns-")
    try:
        make_runs(parent)
        subject = lambda: spawn_ms([CLIENT, "runs", "ls", parent], env=daemon.env)  # noqa: E731
        reference = lambda: spawn_ms(["/bin/ls", "-R", parent], env=daemon.env)  # noqa: E731
        subj, refs, noise = interleaved(subject, reference, 2 if quick else 4, 2 if quick else 3)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    r = row("`torch runs ls` of %d run folders, spawn -> exit" % RUNS, subj, "ls -R of the same tree", refs,
            noise=noise)
    r.update(target="<= %g s" % TARGET_S, met=r["median_ms"] <= TARGET_S * 1000)
    return [r]
