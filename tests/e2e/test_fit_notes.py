"""`torch fit` says what happened, one stderr line each: an early stop (the monitored value, its best and the
epoch of it), a resumed run with nothing left to do (where it is), and a fit queued behind another job."""
import json
import os

import torch

X = torch.randn(40, 3, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 2, (40,), generator=torch.Generator().manual_seed(2))
MAKE = ("m=$(torch nn sequential 'linear 3 8' relu 'linear 8 2'); o=$(torch optim sgd $m --lr {lr}); "
        "L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 8 --shuffle --seed 3); ")


def make(sh, lr=0.1):
    return MAKE.format(lr=lr, x=sh.put(X), y=sh.put(Y))


def notes(err):
    return [line for line in err.splitlines() if line.startswith("torch: fit: ")]


def early_stop_oracle(rows, patience):
    """The epoch the run stops after, the best loss and its epoch: strictly lower is better, as fit's rule."""
    best, best_epoch, bad = None, None, 0
    for row in rows:
        if best is None or row["loss"] < best:
            best, best_epoch, bad = row["loss"], row["epoch"], 0
        else:
            bad += 1
        if bad >= patience:
            return row["epoch"], best, best_epoch
    return None


def test_an_early_stop_names_the_monitor_its_best_value_and_epoch(sh):
    r = sh.run(make(sh, lr=0) + "torch fit $m $o $L --loss cross_entropy --epochs 50 --patience 2 --json")
    assert r.code == 0, r.err
    rows = [json.loads(line) for line in r.out.splitlines()]
    stopped, best, best_epoch = early_stop_oracle(rows, 2)
    assert rows[-1]["epoch"] == stopped < 50
    assert notes(r.err) == ["torch: fit: early stop after epoch %d: loss did not improve for 2 epochs "
                            "(best %.6g at epoch %d)" % (stopped, best, best_epoch)]


def test_a_finished_run_resumed_says_there_is_nothing_to_do_and_where_it_is(sh):
    log = sh.tmp("run")
    r = sh.run(make(sh) + "torch fit $m $o $L --loss cross_entropy --epochs 2 --log %s >/dev/null && "
               "torch fit $m $o $L --loss cross_entropy --epochs 2 --log %s --resume auto" % (log, log))
    assert r.code == 0 and r.out == "", r.err
    assert notes(r.err) == ["torch: fit: nothing to do: the run is already at epoch 2 step 10 (--epochs 2)"]
    with open(os.path.join(log, "metrics.jsonl")) as f:
        assert [json.loads(line)["step"] for line in f][-1] == 10  # 40 items, batches of 8: 5 steps an epoch


def test_a_run_stopped_at_max_steps_resumed_with_the_same_limit_says_so(sh):
    log = sh.tmp("run")
    r = sh.run(make(sh) + "torch fit $m $o $L --loss cross_entropy --epochs 2 --max_steps 3 --log %s >/dev/null && "
               "torch fit $m $o $L --loss cross_entropy --epochs 2 --max_steps 3 --log %s --resume auto" % (log, log))
    assert r.code == 0, r.err
    assert notes(r.err) == ["torch: fit: nothing to do: the run is already at epoch 1 step 3 (--max_steps 3)"]


def test_a_fit_queued_behind_another_job_names_it(sh):
    # the long job is stopped only once the second fit is in `job list`: it was queued behind it by then
    r = sh.run(make(sh) + "a=$(torch fit $m $o $L --loss cross_entropy --epochs 100000 --detach); echo $a; "
               "(until torch job list | awk -v s=queued '$3 == s {f = 1} END {exit !f}'; do sleep 0.1; done; torch job stop $a >/dev/null) & "
               "m2=$(torch nn linear 3 2); torch fit $m2 $(torch optim sgd $m2) $L --loss cross_entropy --epochs 1 "
               ">/dev/null; echo rc=$?; wait", timeout=180)
    first = r.out.splitlines()[0]
    assert first.startswith("job://") and "rc=0" in r.out, r.err
    assert notes(r.err) == ["torch: fit: queued behind %s (one job runs at a time; `torch job list` shows them)"
                            % first]
