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


# A plain script that times each command with $EPOCHREALTIME (a builtin: no process to time it), BODY's
# lines per iteration, in rounds; PRELUDE makes `torch` the function (fast bash) or leaves it the launcher.
_SCRIPT = r'''#!/bin/bash
PRELUDE
a=$(torch randn '[3]'); b=$(torch randn '[3]')
ms() { local s=${1/./} e=${2/./}; echo "$3 $(( (10#$e - 10#$s) ))"; }
for r in $(seq ROUNDS); do
  for i in $(seq PER); do
BODY
  done
  echo round
  torch free --all
  a=$(torch randn '[3]'); b=$(torch randn '[3]')
done
'''
_FAST_BODY = r'''    t0=$EPOCHREALTIME; torch add $a $b >/dev/null; t1=$EPOCHREALTIME
    PYCLIENT add $a $b >/dev/null; t2=$EPOCHREALTIME
    ms $t0 $t1 fast; ms $t1 $t2 real
    t0=$EPOCHREALTIME; x=$(torch randn '[3]'); torch mul $x $x | torch sum >/dev/null; t1=$EPOCHREALTIME
    x=$(PYCLIENT randn '[3]'); PYCLIENT mul $x $x | PYCLIENT sum >/dev/null; t2=$EPOCHREALTIME
    ms $t0 $t1 pipe_fast; ms $t1 $t2 pipe_real'''
_LAUNCHER_BODY = r'''    t0=$EPOCHREALTIME; torch add $a $b >/dev/null; t1=$EPOCHREALTIME
    PYCLIENT add $a $b >/dev/null; t2=$EPOCHREALTIME
    bash -c : ; t3=$EPOCHREALTIME
    ms $t0 $t1 launcher; ms $t1 $t2 python; ms $t2 $t3 bash'''


def fast_path(daemon, quick=False):
    samples, noise = _timed(daemon, 'eval "$(torch init bash)"', _FAST_BODY, (3, 10) if quick else (5, 30),
                            ("fast", "real", "pipe_fast", "pipe_real"), "real")
    one = row("fast bash: one `torch add $a $b`", samples["fast"], "Python client (python -IS), same command",
              samples["real"], target="<= %g ms" % FAST_TARGET_MS, noise=noise)
    one["met"] = one["median_ms"] <= FAST_TARGET_MS
    pipe = row("fast bash: a=$(torch randn); torch mul $a $a | torch sum", samples["pipe_fast"],
               "Python client (python -IS), same pipeline", samples["pipe_real"], target="<= %g ms" % PIPELINE_TARGET_MS,
               noise=noise)
    pipe["met"] = pipe["median_ms"] <= PIPELINE_TARGET_MS
    return [one, pipe]


def launcher(daemon, quick=False):
    daemon.cli("init", "bash")  # the fast path on, as the first command of any caller turns it on
    samples, noise = _timed(daemon, "", _LAUNCHER_BODY, (3, 10) if quick else (5, 40), ("launcher", "python", "bash"),
                            "python")
    one = row("launcher: a plain #!/bin/bash script's `torch add $a $b`", samples["launcher"],
              "Python client (python -IS), same command", samples["python"], target="<= %g ms" % LAUNCHER_TARGET_MS,
              noise=noise)
    one["met"] = one["median_ms"] <= LAUNCHER_TARGET_MS
    floor = row("launcher: the same, against a bash process's floor", samples["launcher"], "`bash -c :`, same script",
                samples["bash"], noise=noise)
    return [one, floor]


def _timed(daemon, prelude, body, rounds_per, kinds, noisy_kind):
    """Run _SCRIPT as a plain script file: {kind: [ms]} and the spread of noisy_kind's per-round medians."""
    rounds, per = rounds_per
    text = _SCRIPT.replace("PRELUDE", prelude).replace("BODY", body).replace("ROUNDS", str(rounds)).replace(
        "PER", str(per)).replace("PYCLIENT", PYCLIENT)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "timed.sh")
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o700)
        p = subprocess.run([path], env=daemon.env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("bench script failed: %s" % p.stderr[-2000:])
    samples, medians, current = {k: [] for k in kinds}, [], []
    for line in p.stdout.splitlines():  # "KIND US" lines, and "round" after each round
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
