"""Nushell: what torch.nu costs per op and at `use`, beside references measured in the same run.

Per op: `torch add $a $b` in a loop of N inside one nu process (the loop's time / N), in rounds that
alternate with the same loop of nu's own `http post --unix-socket` sending the module's request (the
floor: what nu itself pays for one HTTP request) and with bash's fast function (`eval "$(torch init
bash)"`, a loop of N inside one bash). The module runs twice: with the socket's folder under a sealed
$XDG_RUNTIME_DIR, where its trust verdict is kept for the nu process (the usual Linux layout), and
without one, where every request checks the folder with `ls` (a /tmp layout).

At `use`: `nu -c 'use torch.nu'` next to a bare `nu -c ''`, alternating; the difference of the medians
(wall, and CPU time, which other load on the machine inflates less).

    .venv/bin/python -m bench.nushell [--quick]

Targets: <= 1.5 ms per op through the module (verdict kept); `use torch.nu` <= 60 ms on top of nu's start.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import ROOT, Daemon, row

NU = os.path.join(ROOT, ".tools", "nu", "node_modules", "@nushell", "linux-x64", "bin", "nu")
MODULE = os.path.join(ROOT, "src", "torchsh", "shells", "torch.nu")
TARGET_MS = 1.5
USE_TARGET_MS = 60.0

# One process's rounds: per round, ms per op of a loop of N of `torch add` through the module, or of the
# floor (nu's own `http post` of the request the module sends).
NU_LOOP = """use %(module)s
let a = (torch randn [3])
let b = (torch randn [3])
let body = ({tensors: [], args: [$a $b], kwargs: {}, no_grad: false, cwd: $env.PWD, env: {
    TORCHSH_SCOPE: "", TORCHSH_NO_GRAD: "", TORCHSH_INFERENCE_MODE: "", TORCHSH_DEVICE: "", TORCHSH_CONTEXT: "default"
}} | to json --raw)
let sock = $env.TORCHSH_SOCKET
def by-http [] {
    http post --unix-socket $sock --raw --allow-errors http://localhost/v1/ops/add $body | from json | get result
}
def by-module [] { torch add $a $b }
for i in 1..10 { %(what)s | ignore }
mut samples = []
for r in 1..%(rounds)d {
    $samples = ($samples | append ((timeit { for i in 1..%(n)d { %(what)s | ignore } }) / 1ms / %(n)d))
}
$samples | to json --raw | print
"""
BASH_LOOP = """eval "$(torch init bash)"
a=$(torch randn '[3]'); b=$(torch randn '[3]')
for i in $(seq 20); do torch add $a $b >/dev/null; done
for r in $(seq %(rounds)d); do
    t0=$EPOCHREALTIME
    for ((i = 0; i < %(n)d; i++)); do torch add $a $b >/dev/null; done
    t1=$EPOCHREALTIME
    echo $(( (10#${t1/./} - 10#${t0/./}) ))
done
"""


def run(quick=False):
    if not os.access(NU, os.X_OK):
        raise RuntimeError("nushell is not installed at %s (scripts/bootstrap.sh --with-shells)" % NU)
    root = _sealed_root()
    try:
        with Daemon(parent=root) as daemon:
            return _per_op(daemon, root, 100 if quick else 300, 2 if quick else 5) + [
                _startup(daemon, 7 if quick else 21)]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _sealed_root():
    """A private folder whose every folder above belongs to us or root and is writable by its owner only,
    as $XDG_RUNTIME_DIR is (/run/user/UID): inside it when there is one, else in the home folder."""
    return tempfile.mkdtemp(prefix="tshb-run-", dir=os.environ.get("XDG_RUNTIME_DIR") or os.path.expanduser("~"))


def _per_op(daemon, root, n, processes):
    """Rows of ms per op, wall (a loop's time / N), with nu's own CPU per op in the note (which other
    load on the machine inflates less): the process's CPU less that of one making a single call."""
    runs = {"kept": ("by-module", {"XDG_RUNTIME_DIR": root}), "checked": ("by-module", {"XDG_RUNTIME_DIR": ""}),
            "floor": ("by-http", {})}
    wall, cpu = {k: [] for k in list(runs) + ["bash"]}, {k: [] for k in runs}
    for _ in range(processes):  # the loops alternate process by process, so all see the same load
        for key, (what, env) in runs.items():
            samples, used = _nu_loop(daemon, what, n, 3, env)
            _, base = _nu_loop(daemon, what, 1, 1, env)
            wall[key] += samples
            cpu[key].append((used - base) / (3 * n - 1))
        wall["bash"] += _bash_loop(daemon, n)
    note = "a loop of %d in one process, per op; nu's CPU per op %%.2f ms (floor %.2f ms)" % (
        n, statistics.median(cpu["floor"]))
    floor = "nu: http post --unix-socket (the floor)"
    rows = [row("nu: torch add via torch.nu, folder's trust verdict kept", wall["kept"], floor, wall["floor"],
                target="<= %.1f ms" % TARGET_MS, note=note % statistics.median(cpu["kept"])),
            row("nu: torch add via torch.nu, verdict kept", wall["kept"], "bash: torch add, fast function",
                wall["bash"], note=note % statistics.median(cpu["kept"])),
            row("nu: torch add via torch.nu, folder checked per call (ls)", wall["checked"], floor, wall["floor"],
                note=note % statistics.median(cpu["checked"]) + "; a socket folder under /tmp")]
    rows[0]["met"] = rows[0]["median_ms"] <= TARGET_MS
    return rows


def _nu_loop(daemon, what, n, rounds, env):
    """([ms per op, one per round], the process's CPU ms) of `rounds` loops of `n` in one nu process."""
    script = NU_LOOP % {"module": MODULE, "rounds": rounds, "n": n, "what": what}
    with tempfile.TemporaryFile("w+") as out:
        pid = os.posix_spawn(NU, [NU, "--no-config-file", "-c", script], dict(daemon.env, **env),
                             file_actions=[(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                                           (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                                           (os.POSIX_SPAWN_DUP2, out.fileno(), 2)])
        _, status, usage = os.wait4(pid, 0)
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError("nu bench script failed (%s): %s" % (what, text[-500:]))
    return json.loads(text), (usage.ru_utime + usage.ru_stime) * 1000


def _bash_loop(daemon, n):
    p = subprocess.run(["bash", "-c", BASH_LOOP % {"rounds": 3, "n": n}], env=daemon.env, capture_output=True,
                       text=True, timeout=900, stdin=subprocess.DEVNULL)
    if p.returncode:
        raise RuntimeError("bash bench script failed: %s" % p.stderr.strip()[-500:])
    return [int(us) / 1000 / n for us in p.stdout.split()]


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
        print("%-58s median %7.2f ms  p90 %7.2f ms  | %s median %.2f ms  ratio %s%s\n%58s %s" % (
            r["name"], r["median_ms"], r["p90_ms"], r["reference"], r["ref_median_ms"], ratio,
            "  target %s: %s" % (r["target"], "met" if r["met"] else "NOT met") if r.get("target") else "",
            "", r["note"]))


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    main(sys.argv[1:])
