"""Checkpoints: model + optimizer + scheduler (+ RNG) in one safetensors file with JSON metadata, no pickle.
Resuming in a fresh daemon continues exactly: 10 + 10 steps equal 20 uninterrupted, bit for bit."""
import json
import os
import time

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

X = torch.randn(32, 3, generator=torch.Generator().manual_seed(5))
Y = torch.randn(32, 2, generator=torch.Generator().manual_seed(6))
# dropout draws from the RNG every step, so exact resuming needs the RNG state too
BUILD = ("torch manual_seed 0; m=$(torch nn sequential 'linear 3 16' relu 'dropout --p 0.2' 'linear 16 2'); "
         "o=$(torch optim adamw $m --lr 0.01 --betas 0.9,0.99); s=$(torch sched cosine $o --T_max 20); ")


def steps(shell, n, after=""):
    x, y = shell.put(X), shell.put(Y)
    loop = "for i in $(seq %d); do torch train_step $m $o %s %s --sched $s >/dev/null; done; " % (n, x, y)
    return shell(BUILD + loop + after)


def weights_after(shell, script_tail, n):
    path = shell.tmp("final.safetensors")
    steps(shell, n, script_tail + "torch nn save $m %s" % path)
    return load_file(path)


@pytest.mark.slow
def test_resuming_in_a_fresh_daemon_equals_uninterrupted_training(sh, fresh_sh):
    straight = sh.tmp("straight.safetensors")
    steps(sh, 20, "torch nn save $m %s" % straight)
    first = fresh_sh()
    ckpt = first.tmp("ckpt.safetensors")
    steps(first, 10, "torch checkpoint save %s $m $o $s" % ckpt)
    first("torch daemon stop")
    while os.path.exists(first.socket):  # the next daemon binds the same socket
        time.sleep(0.05)
    second = fresh_sh()
    resumed = second.tmp("resumed.safetensors")
    x, y = second.put(X), second.put(Y)
    second("m=$(torch nn sequential 'linear 3 16' relu 'dropout --p 0.2' 'linear 16 2'); "
           "o=$(torch optim adamw $m --lr 0.01 --betas 0.9,0.99); s=$(torch sched cosine $o --T_max 20); "
           "torch checkpoint load %s $m $o $s; "
           "for i in $(seq 10); do torch train_step $m $o %s %s --sched $s >/dev/null; done; "
           "torch nn save $m %s" % (ckpt, x, y, resumed))
    want, got = load_file(straight), load_file(resumed)
    assert all(torch.equal(got[k], want[k]) for k in want)


def test_checkpoint_is_safetensors_with_json_metadata(sh):
    ckpt = sh.tmp("c.safetensors")
    steps(sh, 2, "torch checkpoint save %s $m $o $s" % ckpt)
    with safe_open(ckpt, framework="pt") as f:
        keys = set(f.keys())
        meta = json.loads(f.metadata()["torchsh"])
    assert {"model.0.weight", "model.3.bias", "rng.cpu"} <= keys
    assert meta["format"] == "torchsh-checkpoint-1" and meta["optimizer"]["kind"] == "AdamW"
    assert meta["scheduler"]["kind"] == "CosineAnnealingLR"
    assert sum(k.startswith("optim.") for k in keys) == 4 * 3  # step, exp_avg, exp_avg_sq per parameter


def test_load_into_another_architecture_changes_nothing(sh):
    ckpt = sh.tmp("c.safetensors")
    steps(sh, 1, "torch checkpoint save %s $m $o" % ckpt)
    other = sh("torch nn sequential 'linear 3 16' relu 'linear 16 2'")
    before = _state(sh, other)
    r = sh.run("torch checkpoint load %s %s" % (ckpt, other))
    assert r.code == 4 and "[state_mismatch]" in r.err and ("3.weight" in r.err or "2.weight" in r.err)
    after = _state(sh, other)
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_load_with_another_optimizer_kind_changes_nothing(sh):
    ckpt = sh.tmp("c.safetensors")
    steps(sh, 1, "torch checkpoint save %s $m $o" % ckpt)
    m = sh("torch nn sequential 'linear 3 16' relu 'dropout --p 0.2' 'linear 16 2'")
    before = _state(sh, m)
    r = sh.run("o=$(torch optim sgd %s); torch checkpoint load %s %s $o" % (m, ckpt, m))
    assert r.code == 4 and "AdamW" in r.err and "SGD" in r.err
    assert all(torch.equal(before[k], v) for k, v in _state(sh, m).items())


def test_checkpoint_save_refuses_a_pickle_name_and_writes_nothing(sh, tmp_path):
    m = sh("torch nn linear 2 1")
    for name in ("ck.pt", "ck.pth", "ck.ckpt"):
        r = sh.run("cd %s && torch checkpoint save %s %s" % (tmp_path, name, m))
        assert r.code == 2 and r.err.rstrip().endswith("[bad_argument]"), r.err
        assert "ck.safetensors" in r.err and "nn save" in r.err
    assert list(tmp_path.iterdir()) == []


def test_load_of_a_plain_weights_file_is_refused(sh):
    m = sh("torch nn linear 2 2")
    path = sh.tmp("w.safetensors")
    sh("torch nn save %s %s" % (m, path))
    r = sh.run("torch checkpoint load %s %s" % (path, m))
    assert r.code == 6 and "not a torchsh checkpoint" in r.err


def _state(sh, m):
    path = sh.tmp("s.safetensors")
    sh("torch nn save %s %s" % (m, path))
    return load_file(path)
