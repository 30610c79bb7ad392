"""`torch value` of big float32 tensors as JSON, end to end through the `torch` command, and
`torch daemon status` while a 16M-value one runs (issue 11 §5).

References, in this process and interleaved with the subject: json.dumps(t.tolist()) of the same
values (C code, but repr of each float64, not the shortest float32 text the CLI prints), and
`torch daemon status` on an idle daemon.
"""
import json
import os
import subprocess
import tempfile
import time

import torch

from bench.common import CLIENT, interleaved, percentile, row, spawn_ms

VALUE_1M_TARGET_MS, VALUE_16M_TARGET_MS, STATUS_P99_TARGET_MS = 150.0, 2000.0, 50.0


def _timed(fn):
    t0 = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t0) / 1e6


def value_rows(daemon, quick=False):
    rows = []
    folder = tempfile.mkdtemp(prefix="tshv-")
    out = os.path.join(folder, "value.json")
    for n, target, rounds, per_round in ((1_000_000, VALUE_1M_TARGET_MS, 3, 1 if quick else 3),
                                         (16_000_000, VALUE_16M_TARGET_MS, 1 if quick else 2, 1)):
        h = daemon.cli("randn", "[%d]" % n)
        t = torch.randn(n)
        subj, ref, noise = interleaved(lambda: spawn_ms([CLIENT, "value", h], daemon.env, stdout=out),
                                       lambda: _timed(lambda: json.dumps(t.tolist())), rounds, per_round)
        with open(out, "rb") as f:
            text = f.read()
        assert text.startswith(b"[") and text.count(b",") == n - 1, "torch value printed something else"
        daemon.cli("free", h)
        r = row("value: `torch value` %s float32 as JSON (%.0f MB)" % (_count(n), len(text) / 1e6), subj,
                "in-process json.dumps(t.tolist())", ref, target="<= %g ms" % target, noise=noise)
        r["met"] = r["median_ms"] <= target
        rows.append(r)
    os.unlink(out)
    return rows


def status_during_value(daemon, quick=False):
    """p99 of `torch daemon status` (spawn -> exit) while `torch value` of 16M float32 runs, next to
    the same on the idle daemon."""
    h = daemon.cli("randn", "[16000000]")
    idle = [spawn_ms([CLIENT, "daemon", "status"], daemon.env) for _ in range(20 if quick else 60)]
    busy = []
    for _ in range(1 if quick else 2):
        with open(os.devnull, "wb") as sink:
            p = subprocess.Popen([CLIENT, "value", h], env=daemon.env, stdout=sink)
        time.sleep(0.05)  # the request reaches the daemon
        while p.poll() is None:
            busy.append(spawn_ms([CLIENT, "daemon", "status"], daemon.env))
        if p.returncode:
            raise RuntimeError("torch value exited %d" % p.returncode)
    daemon.cli("free", h)
    r = row("value: `torch daemon status` during a 16M-value `torch value` (p90 shown; p99 in note)", busy,
            "the same on an idle daemon", idle, target="p99 <= %g ms" % STATUS_P99_TARGET_MS,
            note="p99 %.1f ms (idle p99 %.1f ms), %d samples" % (percentile(busy, 0.99), percentile(idle, 0.99),
                                                                 len(busy)))
    r["p99_ms"], r["ref_p99_ms"] = percentile(busy, 0.99), percentile(idle, 0.99)
    r["met"] = r["p99_ms"] <= STATUS_P99_TARGET_MS
    return [r]


def _count(n):
    return "%dM" % (n // 1_000_000) if n % 1_000_000 == 0 else str(n)


def run(daemon, quick=False):
    return value_rows(daemon, quick) + status_during_value(daemon, quick)


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(json.dumps(r))
