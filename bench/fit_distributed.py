"""`torch fit --nproc_per_node 2` against the one-process `torch fit`, on this machine's CPU (gloo).

Data: N x 784 float32 and N int64 labels in memory (`data tensors`), made here (seed 0). Model: MLP
784-512-512-10, AdamW(lr=1e-3), cross_entropy. The global batch is 256 in both runs: the one-process fit
takes batches of 256, each of the 2 ranks batches of 128 (DDP averages their gradients: the same step).

  (a) `fit --nproc_per_node 2`: samples/s of the whole command (start of the launcher and ranks included)
      and of the training alone (the epochs' `seconds`, as the rows report them);
  (b) the one-process `fit`, the same epochs: samples/s (also with OMP_NUM_THREADS=1, as each rank
      runs on a 2-core machine: OpenMP's threads spin-wait, and on shared cores that costs much).
  start-up: (a)'s wall time minus its epochs' seconds: the launcher, the forkserver's `import torch`,
  the rendezvous, rebuilding the objects in every rank, and loading the result back.

On a CUDA machine (`--device cuda`) the model goes to the GPU: nccl, one rank per GPU (nproc = GPUs).
Subject and reference alternate, ROUNDS times; the figures are medians over rounds.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import Daemon, spread, value_row  # noqa: E402

N, FEATURES, CLASSES, BATCH, EPOCHS = 20000, 784, 10, 256, 2
MLP = ("linear 784 512", "relu", "linear 512 512", "relu", "linear 512 10")


def handles(daemon, batch, device=None):
    daemon.cli("manual_seed", "0")
    x = daemon.cli("randn", str(N), str(FEATURES))
    y = daemon.cli("randint", "0", str(CLASSES), "[%d]" % N)
    loader = daemon.cli("data", "loader", daemon.cli("data", "tensors", x, y), "--batch_size", str(batch),
                        "--shuffle", "--seed", "0")
    model = daemon.cli("nn", "sequential", *MLP)
    if device:
        daemon.cli("nn", "to", model, device)
    opt = daemon.cli("optim", "adamw", model, "--lr", "0.001")
    return model, opt, loader


def fit(daemon, nproc, device=None):
    """(wall seconds, the epochs' seconds) of one `fit` of EPOCHS epochs."""
    batch = BATCH // nproc if nproc > 1 else BATCH
    model, opt, loader = handles(daemon, batch, device)
    argv = ["fit", model, opt, loader, "--loss", "cross_entropy", "--epochs", str(EPOCHS), "--json"]
    if nproc > 1:
        argv += ["--nproc_per_node", str(nproc)]
    t0 = time.perf_counter()
    rows = [json.loads(line) for line in daemon.cli(*argv).splitlines()]
    wall = time.perf_counter() - t0
    daemon.cli("free", model, opt, loader)
    return wall, sum(r["seconds"] for r in rows)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def run(quick=False, device=None):
    rounds = 1 if quick else 3
    nproc = 2
    if device == "cuda":
        import torch
        nproc = max(1, torch.cuda.device_count())
    walls, trains, ones, single = [], [], [], []
    with Daemon() as daemon:
        for _ in range(rounds):
            wall, train = fit(daemon, nproc, device)
            walls.append(wall)
            trains.append(train)
            ones.append(fit(daemon, 1, device)[1])
    if device is None:  # the ranks run one OpenMP thread each on 2 cores: the one-process fit so too
        os.environ["OMP_NUM_THREADS"] = "1"
        try:
            with Daemon() as daemon:
                single = [fit(daemon, 1)[1] for _ in range(rounds)]
        finally:
            del os.environ["OMP_NUM_THREADS"]
    samples = N * EPOCHS
    where = "CUDA x%d (nccl)" % nproc if device == "cuda" else "CPU (gloo)"
    one = samples / median(ones)
    extra = [value_row("one-process fit, daemon with OMP_NUM_THREADS=1 (as each rank)", samples / median(single),
                       "samples/s", "one-process fit, default threads", one, noise=spread(single))] if single else []
    return extra + [
        value_row("fit --nproc_per_node %d, %s, MLP 784-512-512-10 global batch 256, %d x %d epochs: whole command"
                  % (nproc, where, N, EPOCHS), samples / median(walls), "samples/s", "one-process fit", one,
                  noise=spread(walls)),
        value_row("fit --nproc_per_node %d, %s: training alone (the epochs' seconds)" % (nproc, where),
                  samples / median(trains), "samples/s", "one-process fit", one, noise=spread(trains)),
        value_row("fit --nproc_per_node %d, %s: start-up and hand-back (wall - training)" % (nproc, where),
                  median(w - t for w, t in zip(walls, trains)), "s", "one-process fit's", 0.0, ratio=0.0),
    ]


if __name__ == "__main__":
    dev = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else None
    for r in run(quick="--quick" in sys.argv, device=dev):
        print("%-110s %10.2f %-9s ref %10.2f  ratio %.3f %s" % (
            r["name"], r["value"], r["unit"], r["ref_value"], r["ratio"] or 0.0, r.get("note", "")))
