"""`torch fit --resume auto`: 3 epochs straight equal 1.5 epochs, kill -9 of the daemon, a new daemon,
the same handles made again, `fit --resume auto` to the end: weights equal bit for bit (model,
optimizer, scheduler, loader position mid-epoch, dropout's RNG), and the log reads as one run."""
import json
import os
import signal

import pytest
import torch
from safetensors.torch import load_file

from support.waiting import wait_until

X = torch.randn(50, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (50,), generator=torch.Generator().manual_seed(2))
BUILD = ("torch manual_seed 0; m=$(torch nn sequential 'linear 4 16' relu 'dropout --p 0.25' 'linear 16 3'); "
         "o=$(torch optim adamw $m --lr 0.01); s=$(torch sched cosine $o --T_max 3); "
         "L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 8 --shuffle --seed 11); "
         "V=$(torch data loader $(torch data tensors {x} {y}) --batch_size 16 --shuffle --seed 12); "
         "torch manual_seed 7; ")
FIT = "torch fit $m $o $L --loss cross_entropy --val $V --sched $s --epochs 3 --log {log} --save_every 4 "


def run(shell, log, flags, saved):
    shell(BUILD.format(x=shell.put(X), y=shell.put(Y)) + FIT.format(log=log) + flags
          + " >/dev/null; torch nn save $m %s" % saved)
    return load_file(saved)


def kill_daemon(shell):
    pid = json.loads(shell("torch daemon status --json"))["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not os.path.exists("/proc/%d" % pid))


# 7 batches an epoch: step 10 is mid-epoch 2; with --accum 2, 4 steps an epoch: step 6 is mid-epoch 2
@pytest.mark.parametrize("flags,half_steps,steps", [("", 10, 21), ("--autocast fp16 --accum 2 --clip 1", 6, 12)],
                         ids=["plain", "fp16-scaler-accum-clip"])
@pytest.mark.slow
def test_resume_after_kill_9_mid_epoch_equals_the_straight_run(sh, fresh_sh, flags, half_steps, steps):
    want = run(sh, sh.tmp("straight"), flags, sh.tmp("straight.safetensors"))
    s = fresh_sh()
    log = s.tmp("run")
    half = run(s, log, "%s --max_steps %d" % (flags, half_steps), s.tmp("half.safetensors"))
    assert any(not torch.equal(half[k], want[k]) for k in want)
    kill_daemon(s)
    with open(os.path.join(log, "metrics.jsonl"), "a") as f:  # rows past the checkpoint, a line cut short
        f.write(json.dumps({"kind": "step", "epoch": 2, "step": half_steps + 1, "loss": 9.0}) + '\n{"kind": "st')
    got = run(s, log, flags + " --resume auto", s.tmp("resumed.safetensors"))  # a new daemon starts here
    assert all(torch.equal(got[k], want[k]) for k in want)
    with open(os.path.join(log, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    assert [r["step"] for r in rows if r["kind"] == "step"] == list(range(1, steps + 1))
    assert [r["epoch"] for r in rows if r["kind"] == "epoch"] == [1, 2, 3]
    with open(os.path.join(log, "run.json")) as f:
        assert json.load(f)["resumed"][0]["step"] == half_steps


def test_resume_of_a_finished_run_changes_nothing(sh):
    log = sh.tmp("run")
    first = run(sh, log, "", sh.tmp("a.safetensors"))
    again = run(sh, log, "--resume auto", sh.tmp("b.safetensors"))
    assert all(torch.equal(first[k], again[k]) for k in first)
