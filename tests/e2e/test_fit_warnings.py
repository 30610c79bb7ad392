"""Issue 36: a Python warning raised inside a job's work (PyTorch's, in a fit's or a sweep's training steps)
reaches the caller's stderr once per kind, as `torch: fit: warning: …`, not only the daemon's log; and the
run's log: a {"kind": "warning"} row of metrics.jsonl (which `torch runs` and `torch plot` read past, and
metrics.csv leaves out) and TensorBoard's `warnings` text."""
import csv
import json
import os

import torch
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util

X = torch.randn(20, 3, generator=torch.Generator().manual_seed(1))
Y = torch.randn(20, 4, generator=torch.Generator().manual_seed(2))
CLASSES = torch.randint(0, 4, (20,), generator=torch.Generator().manual_seed(3))
# F.mse_loss(..., reduce=True) warns at every call (torch/nn/_reduction.py): once per batch of training and --val
REDUCE = "size_average and reduce args will be deprecated, please use reduction='mean' instead."
# nn.Softmax() without dim warns at every forward: fit's probe of item 0 (under the request's own warnings) too
SOFTMAX = "Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X as an argument."


def test_a_warning_of_every_training_step_is_said_once_and_logged_once(sh):
    log = sh.tmp("run")
    r = sh.run("m=$(torch nn sequential 'linear 3 4' softmax); o=$(torch optim sgd $m --lr 0.1); "
               "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8); torch fit $m $o $L --loss mse_loss "
               "--loss_args '{\"reduce\": true}' --epochs 2 --val $L --log %s" % (sh.put(X), sh.put(Y), log))
    assert r.code == 0, r.err
    assert r.err.count("torch: fit: warning: %s\n" % REDUCE) == 1, r.err  # 6 training and 6 val batches: one line
    assert r.err.count(SOFTMAX) == 1, r.err  # the request printed it (the probe): the job does not say it again
    with open(os.path.join(log, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    warned = [row for row in rows if row["kind"] == "warning"]
    assert sorted(w["text"] for w in warned) == sorted([REDUCE, SOFTMAX])
    assert all((w["category"], w["epoch"], w["step"]) == ("UserWarning", 1, 1) for w in warned)
    assert rows.index(warned[-1]) < next(i for i, row in enumerate(rows) if row["kind"] == "step")  # before step 1
    with open(os.path.join(log, "metrics.csv")) as f:
        table = list(csv.DictReader(f))
    assert "text" not in table[0] and {t["kind"] for t in table} == {"step", "epoch"}
    [listed] = json.loads(sh("torch runs ls %s --json" % log))
    assert (listed["status"], listed["epochs"]) == ("finished", 2), listed
    assert "loss" in sh("torch plot %s --width 40" % log)
    acc = event_accumulator.EventAccumulator(log, size_guidance={event_accumulator.TENSORS: 0}).Reload()
    texts = [tensor_util.make_ndarray(e.tensor_proto).item().decode() for e in acc.Tensors("warnings")]
    assert sorted(texts) == sorted("UserWarning: " + t for t in (REDUCE, SOFTMAX))


def test_a_sweeps_trials_warnings_are_said_once_and_each_trials_log_has_them(sh):
    log = sh.tmp("sweep")
    r = sh.run("L=$(torch data loader $(torch data tensors %s %s) --batch_size 8 --shuffle --seed 5); "
               "torch sweep --model \"sequential 'linear 3 8' relu 'linear 8 4'\" --opt 'sgd --lr {lr}' --data $L "
               "--loss cross_entropy --loss_args '{\"reduce\": true}' --space 'lr: [0.01, 0.1]' --trials 2 "
               "--epochs 1 --vectorize 1 --log %s" % (sh.put(X), sh.put(CLASSES), log))
    assert r.code == 0, r.err
    assert r.err.count("warning: %s\n" % REDUCE) == 1, r.err
    for trial in ("trial_0000", "trial_0001"):
        with open(os.path.join(log, trial, "metrics.jsonl")) as f:
            assert [json.loads(line)["text"] for line in f if '"warning"' in line] == [REDUCE]
