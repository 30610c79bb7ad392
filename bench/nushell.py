"""Nushell: per-op latency of `torch add` from a nu script through torch.nu (HTTP over the daemon's
socket, no process) next to the external client `^torch add` from the same script, interleaved call
by call; and what `use torch.nu` adds to nu's start.

    .venv/bin/python -m bench.nushell [--quick]

Target: <= 2 ms per op through the module on this machine.
"""
import json
import os
import subprocess
import sys

from bench.common import ROOT, Daemon, interleaved, row, spawn_ms

NU = os.path.join(ROOT, ".tools", "nu", "node_modules", "@nushell", "linux-x64", "bin", "nu")
MODULE = os.path.join(ROOT, "src", "torchsh", "shells", "torch.nu")
TARGET_MS = 2.0

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
        return [_per_op(daemon, 100 if quick else 500), _startup(daemon, 5 if quick else 15)]


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
    with_module = [NU, "--no-config-file", "-c", "use %s; null" % MODULE]
    bare = [NU, "--no-config-file", "-c", "null"]
    subj, ref, noise = interleaved(lambda: spawn_ms(with_module, daemon.env), lambda: spawn_ms(bare, daemon.env),
                                   rounds=n, per_round=1)
    return row("nu start + `use torch.nu` (%d commands)" % _commands(), subj, "nu start (nothing loaded)", ref,
               noise=noise, note="parse cost of the generated module, paid once per nu process")


def _commands():
    with open(MODULE) as f:
        return sum(1 for line in f if line.startswith("export def "))


def main(argv):
    for r in run(quick="--quick" in argv):
        ratio = "%.2fx" % r["ratio"] if r["ratio"] else "-"
        print("%-52s median %7.2f ms  p90 %7.2f ms  | %s median %.2f ms  ratio %s%s" % (
            r["name"], r["median_ms"], r["p90_ms"], r["reference"], r["ref_median_ms"], ratio,
            "  target %s: %s" % (r["target"], "met" if r["met"] else "NOT met") if r.get("target") else ""))


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    main(sys.argv[1:])
