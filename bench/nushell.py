"""Nushell: per-op latency of `torch add` from a nu script through torch.nu (HTTP over the daemon's
socket, no process) next to the external client `^torch add` from the same script, interleaved call
by call; and what `use torch.nu` adds to nu's start: `nu -c 'use torch.nu'` next to a bare `nu -c ''`,
alternating in the same run, the difference of the medians (wall, and CPU time, which other load on
the machine does not inflate as much).

    .venv/bin/python -m bench.nushell [--quick]

Targets: <= 2 ms per op through the module; `use torch.nu` <= 150 ms on top of a bare nu start.
"""
import json
import os
import statistics
import subprocess
import sys
import time

from bench.common import ROOT, Daemon, row

NU = os.path.join(ROOT, ".tools", "nu", "node_modules", "@nushell", "linux-x64", "bin", "nu")
MODULE = os.path.join(ROOT, "src", "torchsh", "shells", "torch.nu")
TARGET_MS = 2.0
USE_TARGET_MS = 150.0

# Each sample is one call, timed inside nu (timeit), module and external alternating.
SCRIPT = """use %s
let a = (torch randn [3])
let b = (torch randn [3])
for i in 1..5 { torch add $a $b | ignore; ^torch add $a $b | ignore }
mut module = []
mut external = []
for i in 1..%d {
    $module = ($module | append ((timeit { torch add $a $b }) | into int))
    $external = ($external | append ((timeit { ^torch add $a $b | ignore }) | into int))
}
{module: $module, external: $external} | to json --raw | print
"""


def run(quick=False):
    if not os.access(NU, os.X_OK):
        raise RuntimeError("nushell is not installed at %s (scripts/bootstrap.sh --with-shells)" % NU)
    with Daemon() as daemon:
        return [_per_op(daemon, 100 if quick else 500), _startup(daemon, 7 if quick else 21)]


def _per_op(daemon, n):
    p = subprocess.run([NU, "--no-config-file", "-c", SCRIPT % (MODULE, n)], env=daemon.env,
                       capture_output=True, text=True, timeout=900)
    if p.returncode:
        raise RuntimeError("nu bench script failed: %s" % p.stderr.strip()[-500:])
    samples = json.loads(p.stdout)
    module = [ns / 1e6 for ns in samples["module"]]
    external = [ns / 1e6 for ns in samples["external"]]
    r = row("nu: torch add via torch.nu (http --unix-socket)", module, "nu: ^torch add (external client)",
            external, target="<= %.1f ms" % TARGET_MS, note="timed per call inside nu, interleaved")
    r["met"] = r["median_ms"] <= TARGET_MS
    return r


def _startup(daemon, n):
    with_module = [NU, "--no-config-file", "-c", "use %s" % MODULE]
    bare = [NU, "--no-config-file", "-c", ""]
    use, ref = [], []
    for _ in range(n):  # alternate, so both see the same load
        use.append(_spawn(with_module, daemon.env))
        ref.append(_spawn(bare, daemon.env))
    r = row("nu start + `use torch.nu` (%d commands, %d KB)" % (_commands(), os.path.getsize(MODULE) // 1024),
            [w for w, _ in use], "nu start (nothing loaded)", [w for w, _ in ref],
            target="<= %.0f ms on top" % USE_TARGET_MS,
            note="parse cost of the generated module, paid once per nu process")
    added = r["median_ms"] - r["ref_median_ms"]
    cpu = statistics.median(c for _, c in use) - statistics.median(c for _, c in ref)
    r["added_ms"], r["added_cpu_ms"] = added, cpu
    r["met"] = added <= USE_TARGET_MS
    r["note"] += "; adds %.1f ms wall, %.1f ms CPU" % (added, cpu)
    return r


def _spawn(argv, env):
    """(wall ms, CPU ms: user + system) of one process run to exit, output to /dev/null."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)]
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s exited %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def _commands():
    with open(MODULE) as f:
        return sum(1 for line in f if line.startswith("export def "))


def main(argv):
    for r in run(quick="--quick" in argv):
        ratio = "%.2fx" % r["ratio"] if r["ratio"] else "-"
        print("%-52s median %7.2f ms  p90 %7.2f ms  | %s median %.2f ms  ratio %s%s" % (
            r["name"], r["median_ms"], r["p90_ms"], r["reference"], r["ref_median_ms"], ratio,
            "  target %s: %s" % (r["target"], "met" if r["met"] else "NOT met") if r.get("target") else ""))
        if "added_ms" in r:
            print("%-52s adds %.1f ms wall, %.1f ms CPU to a bare nu start" % ("", r["added_ms"], r["added_cpu_ms"]))


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    main(sys.argv[1:])
