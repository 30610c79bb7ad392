"""`torch runs ls|diff|best` over `torch fit --log` folders, and `torch plot A B` overlaying runs: real short
fits for what a run writes, synthetic folders for the statuses a fit leaves behind (stopped, failed,
running)."""
import json
import os
import shutil

import pytest
import torch

X = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (40,), generator=torch.Generator().manual_seed(2))

FIT = ("m=$(torch nn sequential 'linear 4 8' relu 'linear 8 3'); o=$(torch optim sgd $m --lr {lr}); "
       "L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 16 --shuffle --seed 11); "
       "V=$(torch data loader $(torch data tensors {x} {y}) --batch_size 20 --seed 12); "
       "torch fit $m $o $L --loss cross_entropy --val $V --metrics accuracy --epochs 2 --log {log} >/dev/null")


@pytest.fixture(scope="module")
def runs(sh):
    """runs/lr0.1 and runs/sweep/lr0.01: two real fits that differ in their learning rate only."""
    folder = sh.tmp("runs")
    x, y = sh.put(X), sh.put(Y)
    for lr, name in (("0.1", "lr0.1"), ("0.01", "sweep/lr0.01")):
        sh(FIT.format(lr=lr, x=x, y=y, log=os.path.join(folder, name)))
    return folder


def epoch_rows(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["kind"] == "epoch"]


def ls(sh, folder):
    return json.loads(sh("torch runs ls %s --json" % folder))


def test_ls_lists_each_run_with_its_status_epochs_best_and_the_one_hyperparameter_that_differs(sh, runs):
    rows = ls(sh, runs)
    assert [r["name"] for r in rows] == ["lr0.1", "sweep/lr0.01"]
    assert [r["status"] for r in rows] == ["finished", "finished"]
    assert [r["epochs"] for r in rows] == [2, 2]
    for r in rows:
        assert r["monitor"] == "val_loss"
        assert r["best"] == min(e["val_loss"] for e in epoch_rows(os.path.join(runs, r["name"])))
        assert "--epochs 2" in r["command"] and r["seconds"] > 0
    fixed = {"name", "status", "epochs", "best", "monitor", "seconds", "command"}
    assert [set(r) - fixed for r in rows] == [{"lr"}, {"lr"}] and [r["lr"] for r in rows] == [0.1, 0.01]
    header = sh("torch runs ls %s" % runs).splitlines()[0].split()
    assert header == ["NAME", "STATUS", "EPOCHS", "BEST", "LR", "SECONDS", "COMMAND"]


def test_ls_of_a_run_folder_is_that_run(sh, runs):
    assert [r["name"] for r in ls(sh, os.path.join(runs, "lr0.1"))] == ["."]


def test_ls_tells_stopped_failed_and_running_runs_from_finished_ones(sh, runs):
    folder = sh.tmp("statuses")
    for name in ("stopped", "failed", "running"):
        shutil.copytree(os.path.join(runs, "lr0.1"), os.path.join(folder, name))
        jsonl = os.path.join(folder, name, "metrics.jsonl")
        with open(jsonl) as f:
            lines = f.readlines()
        first_epoch = next(i for i, line in enumerate(lines) if '"kind": "epoch"' in line)
        with open(jsonl, "w") as f:  # the run got through epoch 1 only
            f.writelines(lines[:first_epoch + 1] + (lines[first_epoch + 1:first_epoch + 2] if name == "failed" else []))
        record = os.path.join(folder, name, "run.json")
        with open(record) as f:  # as a killed daemon, or a torchsh before run.json's "ended", leaves it
            kept = {k: v for k, v in json.load(f).items() if k != "ended"}
        with open(record, "w") as f:
            json.dump(kept, f)
        last = os.path.join(folder, name, "last.safetensors")
        stamp = os.stat(jsonl).st_mtime_ns
        # stopped: its checkpoint was saved at its last row; failed: rows came after its last checkpoint
        os.utime(last, ns=(stamp, stamp + 10**9 if name != "failed" else stamp - 10**9))
    with open(os.path.join(folder, "running", "metrics.jsonl"), "a"):  # a fit holds it open while it runs
        rows = ls(sh, folder)
    assert {r["name"]: r["status"] for r in rows} == {"failed": "failed", "running": "running", "stopped": "stopped"}
    assert {r["epochs"] for r in rows} == {1}


def test_diff_prints_each_difference_and_exits_1_as_diff_does(sh, runs):
    a, b = os.path.join(runs, "lr0.1"), os.path.join(runs, "sweep/lr0.01")
    r = sh.run("torch runs diff %s %s" % (a, b))
    assert r.code == 1
    lines = r.out.splitlines()
    assert "lr: 0.1 -> 0.01" in lines and "command: " not in r.out  # the commands differ in --log only
    final = [e["val_loss"] for e in (epoch_rows(a)[-1], epoch_rows(b)[-1])]
    assert "final.val_loss: %r -> %r" % tuple(final) in lines
    rows = json.loads(sh.run("torch runs diff %s %s --json" % (a, b)).out)
    assert {"key": "lr", "a": 0.1, "b": 0.01} in rows
    same = sh.run("torch runs diff %s %s" % (a, a))
    assert (same.code, same.out) == (0, "")


def test_best_prints_the_folder_of_the_lowest_or_with_max_the_highest_and_composes(sh, runs):
    names = ["lr0.1", "sweep/lr0.01"]
    val = {n: min(e["val_loss"] for e in epoch_rows(os.path.join(runs, n))) for n in names}
    acc = {n: max(e["val_accuracy"] for e in epoch_rows(os.path.join(runs, n))) for n in names}
    best = lambda flags: os.path.join(sh.folder, sh("torch runs best %s %s" % (runs, flags)))  # noqa: E731
    assert best("--by val_loss") == os.path.join(runs, min(val, key=val.get))
    assert best("--by val_accuracy --max") == os.path.join(runs, max(acc, key=acc.get))
    # relative to the caller's folder, and in $(…): the checkpoint of the best run loads
    parent, base = os.path.split(runs)
    out = sh("cd %s && torch checkpoint load $(torch runs best %s)/best.safetensors "
             "$(torch nn sequential 'linear 4 8' relu 'linear 8 3') >/dev/null && torch runs best %s" % (parent, base, base))
    assert out == os.path.join(base, min(val, key=val.get))


def test_best_names_an_unknown_metric_and_the_ones_there_are(sh, runs):
    r = sh.run("torch runs best %s --by val_acuracy --max" % runs)
    assert r.code == 2 and r.err.count("\n") == 1
    assert "[unknown_metric]" in r.err and "did you mean val_accuracy" in r.err


def test_a_folder_without_runs_is_one_line_with_its_code(sh):
    empty = sh.tmp("empty")
    os.makedirs(os.path.join(empty, "sub"))
    for command in ("runs ls %s", "runs best %s --by loss", "runs diff %s %s"):
        r = sh.run("torch " + command.replace("%s", empty))
        assert r.code == 6 and "[no_runs]" in r.err and r.err.count("\n") == 1, r.err


def test_plot_overlays_runs_one_series_per_run_and_key(sh, runs):
    out = sh("cd %s && torch plot lr0.1 sweep/lr0.01 --y val_loss,loss --x epoch --width 70" % runs)
    legend = [line.split(":")[0].split(None, 1)[1] for line in out.splitlines()[-4:]]
    assert legend == ["lr0.1 val_loss", "lr0.1 loss", "sweep/lr0.01 val_loss", "sweep/lr0.01 loss"]


def test_a_fit_training_now_lists_as_running_and_once_stopped_as_stopped(sh):
    folder = sh.tmp("live")
    job = sh(FIT.format(lr="0.01", x=sh.put(X), y=sh.put(Y), log=folder)
             .replace("--epochs 2", "--epochs 100000 --detach").replace(" >/dev/null", ""))
    try:
        sh("until grep -q epoch %s/metrics.jsonl 2>/dev/null; do sleep 0.1; done" % folder, timeout=120)
        assert [r["status"] for r in ls(sh, folder)] == ["running"]  # answered between the run's steps
    finally:
        sh("torch job stop %s >/dev/null" % job)
    assert [r["status"] for r in ls(sh, folder)] == ["stopped"]


def test_a_resume_with_nothing_to_do_leaves_a_stopped_runs_folder_as_it_was(sh):
    folder = sh.tmp("noop")
    build = FIT.format(lr="0.01", x=sh.put(X), y=sh.put(Y), log=folder).replace(" >/dev/null", "")
    job = sh(build.replace("--epochs 2", "--epochs 100000 --detach"))
    sh("until grep -q epoch %s/metrics.jsonl 2>/dev/null; do sleep 0.1; done; torch job stop %s >/dev/null"
         % (folder, job), timeout=120)
    before = {name: open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))}
    assert [r["status"] for r in ls(sh, folder)] == ["stopped"]
    r = sh.run(build.replace("--epochs 2", "--epochs 100000 --max_steps 1 --resume auto"))  # over already
    assert r.code == 0 and "nothing to do" in r.err
    assert {name: open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))} == before
    assert [r["status"] for r in ls(sh, folder)] == ["stopped"]


def test_plot_of_a_folder_of_runs_draws_every_run_under_it_labelled_by_its_folder(sh, runs):
    out = sh("cd %s && torch plot . --y loss --x epoch --width 70" % runs)
    legend = [line.split(":")[0].split(None, 1)[1] for line in out.splitlines()[-2:]]
    assert legend == ["lr0.1 loss", "sweep/lr0.01 loss"]
    assert sh("torch plot %s/sweep --width 70" % runs) == sh("torch plot %s/sweep/lr0.01 --width 70" % runs)
