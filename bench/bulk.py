"""Bulk data through the CLI: `torch load` of a 100 MB .npy, and `torch value` of 1,000,000 float32 as JSON.

References, in this process: numpy's own np.load of the same file (read + parse), and
json.dumps(t.tolist()) of the same tensor (repr floats, not the shortest float32 text the CLI prints).
"""
import json
import os
import tempfile
import time

import numpy as np
import torch

from bench.common import CLIENT, interleaved, row, spawn_ms, value_row, summary

LOAD_TARGET_MBS, VALUE_TARGET_S = 500.0, 1.0


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


def value_json(daemon, quick=False):
    folder = tempfile.mkdtemp(prefix="tshv-")
    h = daemon.cli("randn", "[1000000]")
    t = torch.randn(1_000_000)
    out = os.path.join(folder, "value.json")
    subj, ref, noise = interleaved(lambda: spawn_ms([CLIENT, "value", h], daemon.env, stdout=out),
                                   lambda: _timed(lambda: json.dumps(t.tolist())), rounds=3, per_round=1 if quick else 2)
    text = open(out).read()
    assert text.startswith("[") and text.count(",") == 999_999, "torch value printed something else"
    os.unlink(out)
    daemon.cli("free", h)
    r = row("bulk: `torch value` 1,000,000 float32 as JSON", subj, "in-process json.dumps(t.tolist())", ref,
            target="<= %g s" % VALUE_TARGET_S, noise=noise)
    r["met"] = r["median_ms"] <= VALUE_TARGET_S * 1000
    return [r]


def run(daemon, quick=False):
    return load_npy(daemon, quick) + value_json(daemon, quick)


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(r)
