"""Tasks 6 to 10 of the agent suite (support/agenttasks.py says how both sides were chosen): a large tensor's
statistics, runs compared, a run's loss plotted, the session replayed as a script, text from a tiny LM."""
import base64
import json
import os
import re
import subprocess
import sys

from support.agenttasks import MLP, jsonl, replay_check, split_words
from support.agentsides import stdout_of

NANS = 1000
GENERATE = ["the sky is", "--raw", "--max_new_tokens", "8", "--temperature", "0"]


# --- 6. a large tensor's statistics (its NaN count) --------------------------------------------------------

def big_setup(sh, folder):
    import numpy as np
    x = np.random.default_rng(6).standard_normal((2000, 1000), dtype=np.float32)
    x.reshape(-1)[np.random.default_rng(7).choice(x.size, NANS, replace=False)] = np.nan
    np.save(os.path.join(folder, "big.npy"), x)


def stats_bash(bash):
    bash.call("torch --help", lookup=True)
    bash.call("torch ops --search nan", lookup=True)
    out, _ = bash.call("t=$(torch load big.npy); torch describe $t")
    return {"text": out}


def stats_mcp(agent):
    t = agent.run("load", "big.npy")
    text, error = agent.call("inspect", handle=t)
    assert not error, text
    return {"text": text}


def stats_check(outcome, **_):
    assert re.search(r'"?nan"?\s*[:=]?\s*%d\b' % NANS, outcome["text"]), outcome["text"][:2000]


# --- 7. runs compared, the best picked ---------------------------------------------------------------------

def runs_setup(sh, folder):
    fitted(sh, folder, [("runs/lr%s" % lr, "sgd --lr %s" % lr) for lr in ("0.1", "0.01", "0.001")], epochs=3)


def fitted(sh, folder, runs, epochs):
    """Run folders as a user leaves them: one `fit --val --log LOG` per (LOG, optimizer words) on flowers.csv."""
    script = ("torch manual_seed 0; L=$(torch data loader $(torch data open flowers.csv --target species) "
              "--batch_size 16 --seed 0); ")
    for log, words in runs:
        kind, options = words.split(" ", 1)
        script += ("m=$(torch nn %s); torch fit $m $(torch optim %s $m %s) $L --loss cross_entropy --epochs %d "
                   "--val $L --log %s >/dev/null; " % (MLP, kind, options, epochs, log))
    sh(script, cwd=folder)


def runs_bash(bash):
    bash.call("torch --help", lookup=True)
    bash.call("torch runs ls runs")
    best, _ = bash.call("torch runs best runs")
    return {"best": best.strip()}


def runs_mcp(agent):
    agent.call("runs", action="ls", dirs=["runs"])
    best, _ = agent.call("runs", action="best", dirs=["runs"])
    return {"best": stdout_of(best).strip()}


def runs_check(outcome, folder, **_):
    def best_val_loss(run):
        return min(r["val_loss"] for r in jsonl(os.path.join(folder, "runs", run, "metrics.jsonl"))
                   if r.get("kind") == "epoch")
    best = min(os.listdir(os.path.join(folder, "runs")), key=best_val_loss)
    assert outcome["best"].rstrip("/").endswith("runs/" + best), (outcome, best)


# --- 8. a run's loss as a PNG ------------------------------------------------------------------------------

def plot_setup(sh, folder):
    fitted(sh, folder, [("run", "adam --lr 0.01")], epochs=5)


def plot_bash(bash):
    bash.call("torch --help", lookup=True)
    bash.call("torch plot --help", lookup=True)
    bash.call("torch plot run --y loss --png loss.png")
    with open(os.path.join(bash.folder, "loss.png"), "rb") as f:
        return {"png": f.read()}


def plot_mcp(agent):
    text, error = agent.call("plot", sources=["run"], y=["loss"])
    assert not error, text
    uri = re.search(r"torchsh://plot/\S+\.png", text).group(0)
    return {"png": blob(agent.read(uri))}


def plot_check(outcome, **_):
    assert outcome["png"][:8] == b"\x89PNG\r\n\x1a\n", outcome["png"][:16]


def blob(contents):
    """The bytes of a resource read through the SDK (a blob is base64, text is text)."""
    part = contents[0]
    return base64.b64decode(part.blob) if getattr(part, "blob", None) else part.text.encode()


# --- 9. the session replayed as a plain PyTorch script -----------------------------------------------------

def xy_setup(sh, folder):
    import numpy as np
    rng = np.random.default_rng(9)
    x = rng.standard_normal((64, 3), dtype=np.float32)
    np.save(os.path.join(folder, "x.npy"), x)
    np.save(os.path.join(folder, "y.npy"), x @ np.array([[1.0], [-2.0], [0.5]], np.float32))


def history_bash(bash):
    bash.call("torch --help", lookup=True)
    bash.call("torch history --help", lookup=True)
    bash.call("torch manual_seed 0; m=$(torch nn sequential 'linear 3 8' relu 'linear 8 1'); "
              "o=$(torch optim adam $m --lr 0.01); L=$(torch data loader $(torch data open x.npy y.npy) "
              "--batch_size 16 --shuffle --seed 0); torch fit $m $o $L --loss mse_loss --epochs 3")
    bash.call("torch history --python --for $m > replay.py")
    return {"script": os.path.join(bash.folder, "replay.py")}


def history_mcp(agent):
    agent.run("manual_seed", "0")
    m = agent.run("nn", *split_words("sequential 'linear 3 8' relu 'linear 8 1'"))
    o = agent.run("optim", "adam", m, "--lr", "0.01")
    d = agent.run("data", "open", "x.npy", "y.npy")
    loader = agent.run("data", "loader", d, "--batch_size", "16", "--shuffle", "--seed", "0")
    agent.job(["fit", m, o, loader, "--loss", "mse_loss", "--epochs", "3"])
    text, error = agent.call("history", target=m)
    assert not error, text
    uri = re.search(r"torchsh://history/\S+\.py", text).group(0)
    script = os.path.join(agent.folder, "replay.py")
    with open(script, "wb") as f:
        f.write(blob(agent.read(uri)))
    return {"script": script}


def history_check(outcome, folder, sh, **_):
    replay_check(outcome["script"], folder, sh.env)


# --- 10. text from a tiny language model -------------------------------------------------------------------

def lm_setup(sh, folder):
    subprocess.run([sys.executable, "-m", "torchsh.lm.tiny", os.path.join(folder, "tiny")], check=True,
                   stdout=subprocess.DEVNULL)


def lm_bash(bash):
    bash.call("torch --help", lookup=True)
    bash.call("torch lm generate --help", lookup=True)
    out, _ = bash.call("m=$(torch lm open tiny); torch lm generate $m %s" % " ".join(
        "'%s'" % w if " " in w else w for w in GENERATE))
    return {"text": out}


def lm_mcp(agent):
    agent.help("lm generate")
    m = agent.run("lm", "open", "tiny")
    return {"text": generated(agent.job(["lm", "generate", m] + GENERATE))}


def generated(text):
    """The generated text: the summary line's when the result is `--json` lines (the jobs tool's), else the text."""
    for line in text.splitlines():
        if line.startswith("{") and '"finish_reason"' in line:
            return json.loads(line)["text"]
    return text


def lm_check(outcome, folder, **_):
    """Greedy decoding is transformers' own, token for token: the oracle is its generate on the same folder."""
    import torch
    from torchsh.lm import library
    tf = library.transformers()
    path = os.path.join(folder, "tiny")
    tok = tf.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = tf.AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    ids = tok(GENERATE[0], return_tensors="pt").input_ids
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, do_sample=False,
                             pad_token_id=tok.pad_token_id)
    want = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
    assert outcome["text"].strip() == want.strip(), (outcome["text"], want)
