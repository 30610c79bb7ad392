"""Ten tasks an agent does with torchsh, each scripted twice: as MCP tool calls through `torch mcp`, and as
the command lines an agent with only a bash tool types (tests/e2e/test_mcp_agent_suite.py runs both).

How the two sides were chosen, so that neither is padded:
- Each task is a fresh agent that knows torchsh only from its tools. It learns what it needs the way its tool
  offers: the bash agent reads `torch --help` first (the CLI's map; `torch ops --search WORD` where the map
  does not show the command) and `torch CMD --help` for the one command whose flags the task turns on; the
  MCP agent's map is its tool definitions (whose descriptions name fit, sweep, lm generate and --resume auto):
  it calls `search` where they name nothing that fits, and `help` for that same command. One look-up each,
  the same commands looked up on both sides.
- The commands are the same commands, with the same flags: what the docs show for the job. The bash agent
  chains them in one call with shell variables, as a competent user does (that makes the bash side shorter:
  fewer calls); the MCP agent calls `run` once per command (it has no shell), or the tool made for the job
  (`objects`, `inspect`, `jobs`, `runs`, `plot`, `history`).
- Neither side prints more than the commands print: no `| head` on one side alone, no `--json` dumps.
- The files a task starts from (a CSV, run folders, a tiny language model) and the objects a user left in the
  daemon are made by `setup` outside both transcripts; `check` is the oracle (pandas-free Python, onnxruntime,
  the replay script's own --check), also outside them.
"""
import json
import os
import random
import subprocess
import sys

from support.agentsides import handles, stdout_of

SPECIES = ("setosa", "versicolor", "virginica")
MLP = "sequential 'linear 4 16' relu 'linear 16 3'"
SPLIT_AND_FIT = ("p=($(torch data split $d 0.8 0.2 --seed 0)); L=$(torch data loader ${p[0]} --batch_size 16 --shuffle "
                 "--seed 0); V=$(torch data loader ${p[1]} --batch_size 64); m=$(torch nn %s); "
                 "o=$(torch optim adam $m --lr 0.01); torch fit $m $o $L --loss cross_entropy --epochs 10 --val $V "
                 "--metrics accuracy" % MLP)
SWEEP = ["sweep", "--model", "sequential 'linear 4 {width}' relu 'linear {width} 3'", "--opt", "adam --lr {lr}",
         "--space", "width: [8, 16]; lr: loguniform(1e-3, 1e-1)", "--trials", "4", "--epochs", "3", "--seed", "0"]
RESUMABLE = "--loss cross_entropy --epochs 20 --log run"


def flowers_csv(folder, rows=150):
    """A separable three-class table: four features around a centre per species (seeded)."""
    rng = random.Random(0)
    lines = ["f1,f2,f3,f4,species"]
    for i in range(rows):
        k = i % 3
        centre = (3.0 * k, -2.0 * k, 1.5 * k, 1.0 - k)
        lines.append(",".join("%.3f" % (c + rng.gauss(0, 0.5)) for c in centre) + "," + SPECIES[k])
    with open(os.path.join(folder, "flowers.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")


def epoch_rows(text):
    """fit's epoch rows as dicts of numbers: its aligned table (a header `epoch loss …`, then a row per epoch) or
    its JSON lines (`--json`, the jobs tool's result); [] when there are none."""
    rows = [json.loads(line) for line in text.splitlines() if line.startswith('{"epoch"')]
    if rows:
        return rows
    lines = [line.split() for line in text.splitlines()]
    for i, words in enumerate(lines):
        if words[:2] == ["epoch", "loss"]:  # the header; `epoch 1  batch 8/8 …` is a progress line
            return [{k: float(v) for k, v in zip(words, row)} for row in lines[i + 1:]
                    if len(row) == len(words) and row[0].isdigit()]
    return []


# --- 1. CSV -> a classifier to a target accuracy ---------------------------------------------------------

def csv_bash(bash):
    bash.call("torch --help", lookup=True)
    bash.call("torch fit --help", lookup=True)
    bash.call("d=$(torch data open flowers.csv --target species); torch data info $d")
    out, _ = bash.call(SPLIT_AND_FIT)
    return {"rows": epoch_rows(out)}


def csv_mcp(agent):
    agent.search("csv dataset")
    agent.help("fit")
    d = agent.run("data", "open", "flowers.csv", "--target", "species")
    agent.run("data", "info", d)
    train, val = handles(agent.run_text("data", "split", d, "0.8", "0.2", "--seed", "0"))
    loader = agent.run("data", "loader", train, "--batch_size", "16", "--shuffle", "--seed", "0")
    vloader = agent.run("data", "loader", val, "--batch_size", "64")
    m = agent.run("nn", *split_words(MLP))
    o = agent.run("optim", "adam", m, "--lr", "0.01")
    out = agent.job(["fit", m, o, loader, "--loss", "cross_entropy", "--epochs", "10", "--val", vloader,
                           "--metrics", "accuracy"])
    return {"rows": epoch_rows(out)}


def csv_check(outcome, **_):
    assert outcome["rows"], "fit printed no rows"
    assert outcome["rows"][-1]["val_accuracy"] >= 0.95, outcome["rows"][-1]


# --- 2. a sweep --------------------------------------------------------------------------------------------

def sweep_bash(bash):
    bash.call("torch --help", lookup=True)
    bash.call("torch sweep --help", lookup=True)
    bash.call("L=$(torch data loader $(torch data open flowers.csv --target species) --batch_size 16 --shuffle "
              "--seed 0); torch %s --data $L --loss cross_entropy --log sweep" % " ".join(quoted(SWEEP)))
    best, _ = bash.call("torch runs best sweep --by loss")
    return {"best": best.strip()}


def sweep_mcp(agent):
    agent.help("sweep")
    d = agent.run("data", "open", "flowers.csv", "--target", "species")
    loader = agent.run("data", "loader", d, "--batch_size", "16", "--shuffle", "--seed", "0")
    agent.job(SWEEP + ["--data", loader, "--loss", "cross_entropy", "--log", "sweep"])
    best, _ = agent.call("runs", action="best", dirs=["sweep"], by="loss")
    return {"best": stdout_of(best).strip()}


def sweep_check(outcome, folder, **_):
    trials = sorted(t for t in os.listdir(os.path.join(folder, "sweep")) if t.startswith("trial_"))
    assert len(trials) == 4, trials
    best = min(trials, key=lambda t: min(r["loss"] for r in jsonl(os.path.join(folder, "sweep", t, "metrics.jsonl"))
                                         if r.get("kind") == "epoch"))
    assert outcome["best"].rstrip("/").endswith("sweep/" + best), (outcome, best)


# --- 3. resume a stopped run -------------------------------------------------------------------------------

def resume_bash(bash):
    bash.call("torch --help", lookup=True)
    bash.call("torch fit --help", lookup=True)
    bash.call("L=$(torch data loader $(torch data open flowers.csv --target species) --batch_size 8 --shuffle --seed 0); "
              "m=$(torch nn %s); o=$(torch optim sgd $m --lr 0.05); j=$(torch fit $m $o $L %s --detach); "
              "torch job stop $j" % (MLP, RESUMABLE))
    out, _ = bash.call("torch fit $m $o $L %s --resume auto" % RESUMABLE)
    return {"rows": epoch_rows(out)}


def resume_mcp(agent):
    agent.help("fit")
    d = agent.run("data", "open", "flowers.csv", "--target", "species")
    loader = agent.run("data", "loader", d, "--batch_size", "8", "--shuffle", "--seed", "0")
    m = agent.run("nn", *split_words(MLP))
    o = agent.run("optim", "sgd", m, "--lr", "0.05")
    argv = ["fit", m, o, loader] + RESUMABLE.split()
    job = agent.start(argv)
    agent.call("jobs", action="cancel", job=job)
    out = agent.job(argv + ["--resume", "auto"])
    return {"rows": epoch_rows(out)}


def resume_check(outcome, folder, **_):
    run = json.load(open(os.path.join(folder, "run", "run.json")))
    assert run.get("resumed"), "run.json says nothing of a resume"
    epochs = [r for r in jsonl(os.path.join(folder, "run", "metrics.jsonl")) if r.get("kind") == "epoch"]
    assert [r["epoch"] for r in epochs] == list(range(1, 21)), [r["epoch"] for r in epochs]
    assert outcome["rows"] and outcome["rows"][-1]["epoch"] == 20, outcome["rows"][-1:]


# --- 4. ONNX export of the model the user left in the daemon ----------------------------------------------

def onnx_setup(sh, folder):
    sh("torch manual_seed 0; torch nn %s >/dev/null" % MLP)


def onnx_bash(bash):
    bash.call("torch --help", lookup=True)
    listed, _ = bash.call("torch tensors --kind nn")
    m = handles(listed)[0]
    bash.call("torch ops --search onnx", lookup=True)
    bash.call("torch model export --help", lookup=True)
    bash.call("torch model export %s model.onnx --example 1,4 --dynamic 0" % m)
    return {"file": "model.onnx"}


def onnx_mcp(agent):
    listed, _ = agent.call("objects", kind="nn")
    m = handles(listed)[0]
    agent.search("onnx export")
    agent.help("model export")
    agent.run("model", "export", m, "model.onnx", "--example", "1,4", "--dynamic", "0")
    return {"file": "model.onnx"}


def onnx_check(outcome, folder, **_):
    import numpy as np
    import onnxruntime
    session = onnxruntime.InferenceSession(os.path.join(folder, outcome["file"]))
    out = session.run(None, {session.get_inputs()[0].name: np.ones((5, 4), np.float32)})[0]
    assert out.shape == (5, 3), out.shape


# --- 5. the biggest tensor ---------------------------------------------------------------------------------

def many_setup(sh, folder):
    """An exploratory session's leftovers: 24 tensors of seeded random shapes and a model."""
    rng = random.Random(5)
    shapes = ["%d,%d" % (rng.randint(1, 300), rng.randint(1, 300)) for _ in range(24)]
    sh("torch nn %s >/dev/null; for s in %s; do torch zeros $s >/dev/null; done" % (MLP, " ".join(shapes)))


def biggest_bash(bash):
    bash.call("torch --help", lookup=True)
    out, _ = bash.call("torch tensors --kind tensor")
    return {"handle": max(table_rows(out), key=lambda r: human_bytes(r["BYTES"]))["HANDLE"]}


def biggest_mcp(agent):
    listed, _ = agent.call("objects", kind="tensor", sort="bytes", limit=1)
    return {"handle": handles(listed)[0]}


def biggest_check(outcome, sh, **_):
    rows = json.loads(sh("torch tensors --json --kind tensor"))
    assert outcome["handle"] == max(rows, key=lambda r: r["bytes"])["handle"], outcome


def table_rows(text):
    lines = [line.split() for line in text.splitlines() if line.strip()]
    return [dict(zip(lines[0], row)) for row in lines[1:]]


def human_bytes(text):
    units = {"B": 1, "KB": 1e3, "KiB": 1024, "MB": 1e6, "MiB": 1 << 20, "GB": 1e9, "GiB": 1 << 30}
    number = text.rstrip("BKMGiB")
    return float(number) * units[text[len(number):]]


def quoted(argv):
    import shlex
    return [shlex.quote(a) for a in argv]


def split_words(words):
    import shlex
    return shlex.split(words)


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def replay_check(script, cwd, env):
    """`python script --check`: the replay's own comparison of every object with the daemon's."""
    p = subprocess.run([sys.executable, script, "--check"], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and "match the daemon's" in p.stdout, p.stdout + p.stderr
