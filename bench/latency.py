"""Per-command latency: the standalone client, and the fast bash path (`eval "$(torch init bash)"`).

One `torch add $a $b` is a process start, a request, a reply and an exit; its floor is the bare
interpreter start `python -IS -c pass` on the same interpreter. The fast path has no process at
all; its reference is the standalone client doing the same commands.
"""
import statistics
import subprocess

from bench.common import CLIENT, PYTHON, interleaved, row, spawn_ms

CLIENT_TARGET_MS, CLIENT_TARGET_RATIO = 12.0, 1.4
FAST_TARGET_MS, PIPELINE_TARGET_MS = 1.5, 8.0  # issue 12: one command <= 1.5 ms


def client_command(daemon, quick=False):
    a = daemon.cli("randn", "[3]")
    b = daemon.cli("randn", "[3]")
    cmd, ref = [CLIENT, "add", a, b], [PYTHON, "-IS", "-c", "pass"]
    for _ in range(5):  # warm the page cache and the daemon's pool
        spawn_ms(cmd, daemon.env), spawn_ms(ref, daemon.env)
    subj, refs, noise = interleaved(lambda: spawn_ms(cmd, daemon.env), lambda: spawn_ms(ref, daemon.env),
                                    rounds=3 if quick else 5, per_round=10 if quick else 30)
    r = row("client: one `torch add $a $b` (spawn->exit)", subj, "python3 -IS -c pass", refs,
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
    command torch add $a $b >/dev/null; t2=$EPOCHREALTIME
    ms $t0 $t1 fast; ms $t1 $t2 real
    t0=$EPOCHREALTIME; x=$(torch randn '[3]'); torch mul $x $x | torch sum >/dev/null; t1=$EPOCHREALTIME
    x=$(command torch randn '[3]'); command torch mul $x $x | command torch sum >/dev/null; t2=$EPOCHREALTIME
    ms $t0 $t1 pipe_fast; ms $t1 $t2 pipe_real
  done
  echo round
  torch free --all
  a=$(torch randn '[3]'); b=$(torch randn '[3]')
done
'''


def fast_path(daemon, quick=False):
    rounds, per = (3, 10) if quick else (5, 30)
    script = _FAST_SCRIPT.replace("ROUNDS", str(rounds)).replace("PER", str(per))
    p = subprocess.run(["bash", "-c", script], env=daemon.env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("fast path bench failed: %s" % p.stderr[-2000:])
    samples = {"fast": [], "real": [], "pipe_fast": [], "pipe_real": []}
    real_rounds, current = [], []
    for line in p.stdout.splitlines():
        if line == "round":
            real_rounds.append(statistics.median(current))
            current = []
            continue
        kind, us = line.split()
        samples[kind].append(int(us) / 1000.0)
        if kind == "real":
            current.append(int(us) / 1000.0)
    noise = (max(real_rounds) - min(real_rounds)) / statistics.median(real_rounds)
    one = row("fast bash: one `torch add $a $b`", samples["fast"], "standalone client, same command",
              samples["real"], target="<= %g ms" % FAST_TARGET_MS, noise=noise)
    one["met"] = one["median_ms"] <= FAST_TARGET_MS
    pipe = row("fast bash: a=$(torch randn); torch mul $a $a | torch sum", samples["pipe_fast"],
               "standalone client, same pipeline", samples["pipe_real"], target="<= %g ms" % PIPELINE_TARGET_MS,
               noise=noise)
    pipe["met"] = pipe["median_ms"] <= PIPELINE_TARGET_MS
    return [one, pipe]


def run(daemon, quick=False):
    return client_command(daemon, quick) + fast_path(daemon, quick)


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(r)
