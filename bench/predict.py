"""`torch predict` throughput against the same loop in Python (issue 24: goal >= 0.95x).

Data: a 20,000-row CSV, 32 float features and an integer label (10 classes), opened once by each side
before timing. Model: MLP 32-256-10, the daemon's weights saved and loaded into the reference.
Subject: `torch predict $m $D --batch_size 256 --out preds.csv`, process start to exit (the client's
start is in it). Reference: a Python process of its own (so its OpenMP threads do not share the cores
with the daemon's) that does what a user's script does with the same tensors: eval(), inference_mode,
slices of 256 rows, argmax, and the same CSV (row, prediction) written with the csv module.
Throughput ratio = reference time / subject time (>= 0.95 meets the goal).
"""
import os
import subprocess
import tempfile

import numpy as np

from bench.common import CLIENT, PYTHON, ROOT, interleaved, row, spawn_ms

ROWS, FEATURES, CLASSES, BATCH = 20000, 32, 10, 256
TARGET_RATIO = 0.95

REFERENCE = r'''
import csv, sys, time
import numpy as np, torch
from safetensors.torch import load_file
table = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, dtype=np.float32)
x = torch.from_numpy(np.ascontiguousarray(table[:, :-1]))
model = torch.nn.Sequential(torch.nn.Linear(%(f)d, 256), torch.nn.ReLU(), torch.nn.Linear(256, %(c)d))
model.load_state_dict(load_file(sys.argv[2]))
for _ in sys.stdin:
    t0 = time.perf_counter_ns()
    model.eval()
    with torch.inference_mode():
        preds = torch.cat([model(x[i:i + %(b)d]).argmax(1) for i in range(0, len(x), %(b)d)]).tolist()
    with open(sys.argv[3], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row", "prediction"])
        w.writerows(enumerate(preds))
    print((time.perf_counter_ns() - t0) / 1e6, flush=True)
''' % {"f": FEATURES, "c": CLASSES, "b": BATCH}


def _table(folder):
    g = np.random.default_rng(0)
    x = g.standard_normal((ROWS, FEATURES)).astype(np.float32)
    y = g.integers(0, CLASSES, ROWS)
    path = os.path.join(folder, "data.csv")
    with open(path, "w") as f:
        f.write(",".join(["f%d" % i for i in range(FEATURES)] + ["y"]) + "\n")
        for features, label in zip(x, y):
            f.write(",".join("%.6g" % v for v in features) + ",%d\n" % label)
    return path


def run(daemon, quick=False):
    with tempfile.TemporaryDirectory(prefix="tshp-") as folder:
        data, weights = _table(folder), os.path.join(folder, "w.safetensors")
        daemon.cli("manual_seed", "0")
        m = daemon.cli("nn", "sequential", "linear %d 256" % FEATURES, "relu", "linear 256 %d" % CLASSES)
        d = daemon.cli("data", "open", data, "--target", "y")
        daemon.cli("nn", "save", m, weights)
        ref = subprocess.Popen([PYTHON, "-c", REFERENCE, data, weights, os.path.join(folder, "ref.csv")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)

        def reference():
            ref.stdin.write("go\n")
            ref.stdin.flush()
            return float(ref.stdout.readline())
        cmd = [CLIENT, "predict", m, d, "--batch_size", str(BATCH), "--out", os.path.join(folder, "preds.csv")]
        try:
            for _ in range(2):
                spawn_ms(cmd, daemon.env), reference()
            subj, refs, noise = interleaved(lambda: spawn_ms(cmd, daemon.env), reference,
                                            rounds=2 if quick else 4, per_round=3 if quick else 5)
        finally:
            ref.stdin.close()
            ref.wait()
        with open(os.path.join(folder, "preds.csv")) as a, open(os.path.join(folder, "ref.csv")) as b:
            same = a.read().replace("\r", "") == b.read().replace("\r", "")
    r = row("predict: %d rows, MLP %d-256-%d, b%d, to CSV (spawn->exit)" % (ROWS, FEATURES, CLASSES, BATCH),
            subj, "the same loop in Python (own process)", refs, target=">= %gx throughput" % TARGET_RATIO,
            noise=noise, note="same CSV as the reference" if same else "CSV DIFFERS from the reference")
    r["throughput_ratio"] = r["ref_median_ms"] / r["median_ms"]
    r["met"] = r["throughput_ratio"] >= TARGET_RATIO and same
    return [r]
