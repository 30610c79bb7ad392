"""Per-command latency: the Python client, the installed launcher, and the fast bash path (`torch init bash`).

One `torch add $a $b` by the Python client (`python -IS` on the launcher file) is a process start, a request,
a reply and an exit; its floor is the bare interpreter start `python -IS -c pass` on the same interpreter.
The launcher (`torch` from PATH in a plain `#!/bin/bash` script, no `torch init bash`) is a bash process
that speaks the fast path itself: timed against the Python client and `bash -c :` (a bash process's floor).
The fast path has no process at all; its reference is the Python client doing the same commands.
"""
import os
import shlex
import statistics
import subprocess
import tempfile

from bench.common import CLIENT, PYTHON, interleaved, row, spawn_ms

CLIENT_TARGET_MS, CLIENT_TARGET_RATIO = 12.0, 1.4
FAST_TARGET_MS, PIPELINE_TARGET_MS = 1.5, 8.0  # issue 12: one command <= 1.5 ms
LAUNCHER_TARGET_MS = 4.0  # issue 23: a plain script's `torch add` through the launcher
PYCLIENT = shlex.join([PYTHON, "-IS", CLIENT])  # the Python client, never the launcher's fast path


def client_command(daemon, quick=False):
    a = daemon.cli("randn", "[3]")
    b = daemon.cli("randn", "[3]")
    cmd, ref = [PYTHON, "-IS", CLIENT, "add", a, b], [PYTHON, "-IS", "-c", "pass"]  # the Python client itself
    for _ in range(5):  # warm the page cache and the daemon's pool
        spawn_ms(cmd, daemon.env), spawn_ms(ref, daemon.env)
    subj, refs, noise = interleaved(lambda: spawn_ms(cmd, daemon.env), lambda: spawn_ms(ref, daemon.env),
                                    rounds=3 if quick else 5, per_round=10 if quick else 30)
    r = row("Python client: one `torch add $a $b` (spawn->exit)", subj, "python3 -IS -c pass", refs,
            target="<= %g ms and <= %gx" % (CLIENT_TARGET_MS, CLIENT_TARGET_RATIO), noise=noise)
    r["met"] = r["median_ms"] <= CLIENT_TARGET_MS and r["ratio"] <= CLIENT_TARGET_RATIO
    daemon.cli("free", a, b)
    return [r]


# Runs inside one bash: times each command with $EPOCHREALTIME (a builtin: no process to time it).
_FAST_SCRIPT = r'''
eval "$(torch init bash)"
a=$(torch randn '[3]'); b=$(torch randn '[3]')
ms() { local s=${1/./} e=${2/./}; echo "$3 $(( (10#$e - 10#$s) ))"; }
for r in $(seq ROUNDS); do
  for i in $(seq PER); do
    t0=$EPOCHREALTIME; torch add $a $b >/dev/null; t1=$EPOCHREALTIME
    PYCLIENT add $a $b >/dev/null; t2=$EPOCHREALTIME
    ms $t0 $t1 fast; ms $t1 $t2 real
    t0=$EPOCHREALTIME; x=$(torch randn '[3]'); torch mul $x $x | torch sum >/dev/null; t1=$EPOCHREALTIME
    x=$(PYCLIENT randn '[3]'); PYCLIENT mul $x $x | PYCLIENT sum >/dev/null; t2=$EPOCHREALTIME
    ms $t0 $t1 pipe_fast; ms $t1 $t2 pipe_real
  done
  echo round
  torch free --all
  a=$(torch randn '[3]'); b=$(torch randn '[3]')
done
'''


def fast_path(daemon, quick=False):
    rounds, per = (3, 10) if quick else (5, 30)
    script = _FAST_SCRIPT.replace("ROUNDS", str(rounds)).replace("PER", str(per)).replace(
        "PYCLIENT", PYCLIENT)
    p = subprocess.run(["bash", "-c", script], env=daemon.env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("fast path bench failed: %s" % p.stderr[-2000:])
    samples, noise = _samples(p.stdout, ("fast", "real", "pipe_fast", "pipe_real"), "real")
    one = row("fast bash: one `torch add $a $b`", samples["fast"], "Python client (python -IS), same command",
              samples["real"], target="<= %g ms" % FAST_TARGET_MS, noise=noise)
    one["met"] = one["median_ms"] <= FAST_TARGET_MS
    pipe = row("fast bash: a=$(torch randn); torch mul $a $a | torch sum", samples["pipe_fast"],
               "Python client (python -IS), same pipeline", samples["pipe_real"], target="<= %g ms" % PIPELINE_TARGET_MS,
               noise=noise)
    pipe["met"] = pipe["median_ms"] <= PIPELINE_TARGET_MS
    return [one, pipe]


# A plain script: `torch` is the launcher from PATH (no function); each command timed with $EPOCHREALTIME.
_LAUNCHER_SCRIPT = r'''#!/bin/bash
a=$(torch randn '[3]'); b=$(torch randn '[3]')
ms() { local s=${1/./} e=${2/./}; echo "$3 $(( (10#$e - 10#$s) ))"; }
for r in $(seq ROUNDS); do
  for i in $(seq PER); do
    t0=$EPOCHREALTIME; torch add $a $b >/dev/null; t1=$EPOCHREALTIME
    PYCLIENT add $a $b >/dev/null; t2=$EPOCHREALTIME
    bash -c : ; t3=$EPOCHREALTIME
    ms $t0 $t1 launcher; ms $t1 $t2 python; ms $t2 $t3 bash
  done
  echo round
  torch free --all
  a=$(torch randn '[3]'); b=$(torch randn '[3]')
done
'''


def launcher(daemon, quick=False):
    rounds, per = (3, 10) if quick else (5, 40)
    script = _LAUNCHER_SCRIPT.replace("ROUNDS", str(rounds)).replace("PER", str(per)).replace(
        "PYCLIENT", PYCLIENT)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "plain.sh")
        with open(path, "w") as f:
            f.write(script)
        os.chmod(path, 0o700)
        daemon.cli("init", "bash")  # the fast path on, as the first command of any caller turns it on
        p = subprocess.run([path], env=daemon.env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("launcher bench failed: %s" % p.stderr[-2000:])
    samples, noise = _samples(p.stdout, ("launcher", "python", "bash"), "python")
    one = row("launcher: a plain #!/bin/bash script's `torch add $a $b`", samples["launcher"],
              "Python client (python -IS), same command", samples["python"], target="<= %g ms" % LAUNCHER_TARGET_MS,
              noise=noise)
    one["met"] = one["median_ms"] <= LAUNCHER_TARGET_MS
    floor = row("launcher: the same, against a bash process's floor", samples["launcher"], "`bash -c :`, same script",
                samples["bash"], noise=noise)
    return [one, floor]


def _samples(stdout, kinds, noisy_kind):
    """{kind: [ms]} from "KIND US" lines, and the spread of noisy_kind's per-round medians ("round" lines)."""
    samples, medians, current = {k: [] for k in kinds}, [], []
    for line in stdout.splitlines():
        if line == "round":
            medians.append(statistics.median(current))
            current = []
            continue
        kind, us = line.split()
        samples[kind].append(int(us) / 1000.0)
        if kind == noisy_kind:
            current.append(int(us) / 1000.0)
    return samples, (max(medians) - min(medians)) / statistics.median(medians)


def run(daemon, quick=False):
    return client_command(daemon, quick) + launcher(daemon, quick) + fast_path(daemon, quick)


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(r)
