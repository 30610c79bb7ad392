"""Bulk data through the CLI: `torch load` of a 100 MB .npy (`torch value` of big tensors: bench/value.py).

Reference, in this process: numpy's own np.load of the same file (read + parse).
"""
import os
import tempfile
import time

import numpy as np

from bench.common import CLIENT, interleaved, spawn_ms, value_row, summary

LOAD_TARGET_MBS = 500.0


def _timed(fn):
    t0 = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t0) / 1e6


def load_npy(daemon, quick=False):
    folder = tempfile.mkdtemp(prefix="tshl-")
    path = os.path.join(folder, "x.npy")
    np.save(path, np.random.default_rng(0).standard_normal(25_000_000, dtype=np.float32))  # 100 MB
    size_mb = os.path.getsize(path) / 1e6
    out = os.path.join(folder, "handle")

    def load():
        ms = spawn_ms([CLIENT, "load", path], daemon.env, stdout=out)
        daemon.cli("free", open(out).read().strip())
        return ms
    try:
        subj, ref, noise = interleaved(load, lambda: _timed(lambda: np.load(path)), rounds=3, per_round=1 if quick else 2)
    finally:
        os.unlink(path)
    med, _ = summary(subj)
    ref_med, _ = summary(ref)
    mbs = size_mb / (med / 1000)
    r = value_row("bulk: `torch load` 100 MB .npy (spawn->handle)", mbs, "MB/s", "in-process np.load, same file",
                  size_mb / (ref_med / 1000), target=">= %g MB/s" % LOAD_TARGET_MBS, met=mbs >= LOAD_TARGET_MBS,
                  noise=noise, note="median %.0f ms" % med)
    return [r]


def run(daemon, quick=False):
    return load_npy(daemon, quick)


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(r)
