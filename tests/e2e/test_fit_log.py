"""`torch fit --log DIR`: metrics.jsonl and metrics.csv (a row per step and per epoch), run.json (command,
versions, seeds), and the checkpoints last/best in `torch checkpoint`'s format."""
import csv
import json
import os

import torch
from safetensors.torch import load_file

X = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (40,), generator=torch.Generator().manual_seed(2))

BUILD = ("m=$(torch nn sequential 'linear 4 8' relu 'linear 8 3'); o=$(torch optim adam $m --lr 0.01); "
         "L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 16 --shuffle --seed 11); "
         "V=$(torch data loader $(torch data tensors {x} {y}) --batch_size 20 --seed 12); ")


def fit_with_log(sh, flags, after=""):
    folder = sh.tmp("run")
    sh(BUILD.format(x=sh.put(X), y=sh.put(Y)) + "torch fit $m $o $L --loss cross_entropy --val $V "
       "--metrics accuracy --log %s %s >/dev/null; %s" % (folder, flags, after.replace("DIR", folder)))
    return folder


def read_jsonl(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def test_metrics_files_hold_a_row_per_step_and_per_epoch(sh):
    folder = fit_with_log(sh, "--epochs 2 --accum 2")
    rows = read_jsonl(folder)
    steps = [r for r in rows if r["kind"] == "step"]
    epochs = [r for r in rows if r["kind"] == "epoch"]
    assert [r["step"] for r in steps] == [1, 2, 3, 4]  # 3 batches an epoch, accum 2: steps after batches 2 and 3
    assert [(r["epoch"], r["step"]) for r in epochs] == [(1, 2), (2, 4)]
    assert all({"loss", "lr", "seconds"} <= set(r) for r in rows)
    assert all({"val_loss", "accuracy", "val_accuracy"} <= set(r) for r in epochs)
    with open(os.path.join(folder, "metrics.csv"), newline="") as f:
        table = list(csv.DictReader(f))
    header = list(dict.fromkeys(k for r in rows for k in r))
    assert list(table[0]) == header and len(table) == len(rows)
    assert [float(t["loss"]) for t in table] == [r["loss"] for r in rows]
    # a column by name with awk, as a shell user reads it: Unix line ends, no \r in the last field
    val = sh("awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == \"val_accuracy\") c = i } "
             "$1 == \"epoch\" { a = $c } END { print a }' %s/metrics.csv" % folder)
    assert float(val) == epochs[-1]["val_accuracy"]


def test_run_json_records_command_versions_and_seeds(sh):
    with open(os.path.join(fit_with_log(sh, "--epochs 1"), "run.json")) as f:
        run = json.load(f)
    assert "--epochs 1" in run["command"] and "--loss cross_entropy" in run["command"]
    assert run["versions"]["torch"] == torch.__version__
    assert run["seeds"]["loader"] == 11 and run["seeds"]["val_loader"] == 12
    assert run["loader"]["batch_size"] == 16 and run["loader"]["shuffle"] is True
    assert run["optimizer"]["type"] == "Adam" and run["optimizer"]["param_groups"][0]["lr"] == 0.01


def test_last_checkpoint_loads_with_torch_checkpoint_load(sh):
    saved = sh.tmp("final.safetensors")
    folder = fit_with_log(sh, "--epochs 2", "torch nn save $m %s" % saved)
    assert os.path.exists(os.path.join(folder, "best.safetensors"))
    back = sh.tmp("back.safetensors")
    sh("m=$(torch nn sequential 'linear 4 8' relu 'linear 8 3'); o=$(torch optim adam $m --lr 0.01); "
       "torch checkpoint load %s/last.safetensors $m $o && torch nn save $m %s" % (folder, back))
    want, got = load_file(saved), load_file(back)
    assert all(torch.equal(got[k], want[k]) for k in want)


def test_resume_auto_needs_a_log_folder(sh):
    r = sh.run("m=$(torch nn linear 2 1); L=$(torch data loader $(torch data tensors $(torch randn 4 2) "
               "$(torch randn 4 1))); torch fit $m $(torch optim sgd $m) $L --loss mse_loss --resume auto")
    assert r.code == 2 and "[missing_argument]" in r.err


def test_resume_from_a_named_checkpoint_continues_from_it(sh):
    folder = fit_with_log(sh, "--epochs 1")
    out = sh(BUILD.format(x=sh.put(X), y=sh.put(Y)) + "torch fit $m $o $L --loss cross_entropy --val $V --epochs 3 "
             "--resume %s/best.safetensors --json" % folder)
    assert [json.loads(line)["epoch"] for line in out.splitlines()] == [2, 3]


def test_top5_metric_and_a_plateau_scheduler_stepped_every_epoch(sh):
    # threshold 1: no epoch counts as an improvement (PyTorch: best * 0 is nan even at first), so with
    # patience 0 the scheduler, stepped after every epoch, halves the lr each time
    out = sh(BUILD.format(x=sh.put(X), y=sh.put(Y)) + "s=$(torch sched plateau $o --patience 0 --factor 0.5 "
             "--threshold 1); torch fit $m $o $L --loss cross_entropy --val $V --metrics top5 --sched $s "
             "--epochs 4 --json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0]["top5"] == 1.0 and rows[0]["val_top5"] == 1.0  # 3 classes: always in the top 5
    assert [r["lr"] for r in rows] == [0.01, 0.005, 0.0025, 0.00125]
