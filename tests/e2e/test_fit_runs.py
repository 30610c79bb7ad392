"""A run is never lost or silently replaced: a `fit --log DIR` that holds a run is refused (run_exists, exit 3)
before anything trains, unless `--resume auto` continues it or `--overwrite` replaces it (the old run comes
back whole when the new one fails before its first checkpoint); `--log runs --version` makes runs/version_N
by PyTorch Lightning's rule and names it on stderr."""
import json
import os

import torch
from safetensors.torch import load_file

X = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (40,), generator=torch.Generator().manual_seed(2))
BUILD = ("torch manual_seed 0; m=$(torch nn sequential 'linear 4 8' relu 'linear 8 3'); "
         "o=$(torch optim adam $m --lr 0.01); L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 16 "
         "--shuffle --seed 11); ")
FIT = "torch fit $m $o $L --loss cross_entropy "


def fit(sh, flags, after="", model=None):
    build = BUILD if model is None else BUILD.replace("'linear 4 8' relu 'linear 8 3'", model)
    return sh.run(build.format(x=sh.put(X), y=sh.put(Y)) + FIT + flags + " >/dev/null; " + after)


def files_of(folder):
    """Every file of a log folder, hidden ones too, with its bytes."""
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = f.read()
    return out


def epochs_logged(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        return [r["epoch"] for r in map(json.loads, f) if r["kind"] == "epoch"]


def test_a_log_folder_holding_a_run_is_refused_before_anything_trains(sh):
    log = sh.tmp("run")
    assert fit(sh, "--epochs 2 --log %s" % log).code == 0
    before = files_of(log)
    saved = sh.tmp("after.safetensors")
    r = fit(sh, "--epochs 2 --log %s" % log, "torch nn save $m %s" % saved)
    assert r.code == 0  # the script's last command; the fit's own status is in its stderr line
    line = [x for x in r.err.splitlines() if "[run_exists]" in x]
    assert line and "--resume auto" in line[0] and "--overwrite" in line[0] and log in line[0]
    assert files_of(log) == before  # every byte of the old run, and nothing beside it
    torch.manual_seed(0)  # the model BUILD makes, untrained: the refused fit took no step
    want = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).state_dict()
    got = load_file(saved)
    assert all(torch.equal(got[k], want[k]) for k in want)


def test_run_exists_exits_3_and_resume_auto_continues_the_run(sh):
    log = sh.tmp("run")
    assert fit(sh, "--epochs 1 --log %s --resume auto" % log).code == 0  # nothing there: a fresh run
    r = fit(sh, "--epochs 2 --log %s; exit $?" % log)
    assert r.code == 3 and "[run_exists]" in r.err
    assert fit(sh, "--epochs 2 --log %s --resume auto" % log).code == 0
    assert epochs_logged(log) == [1, 2]


def test_overwrite_replaces_the_run_and_leaves_nothing_of_the_old_one(sh):
    log = sh.tmp("run")
    assert fit(sh, "--epochs 3 --log %s" % log).code == 0
    old_events = [n for n in os.listdir(log) if n.startswith("events.out.tfevents.")]
    r = fit(sh, "--epochs 1 --log %s --overwrite; exit $?" % log)
    assert r.code == 0, r.err
    assert epochs_logged(log) == [1]
    names = sorted(os.listdir(log))
    assert [n for n in names if not n.startswith("events.out.tfevents.")] == [
        "best.safetensors", "last.safetensors", "metrics.csv", "metrics.jsonl", "run.json"]
    new_events = [n for n in names if n.startswith("events.out.tfevents.")]  # TensorBoard's: the new run's only
    assert len(old_events) == len(new_events) == 1


def test_overwrite_that_fails_before_its_first_checkpoint_gives_the_old_run_back(sh):
    log = sh.tmp("run")
    assert fit(sh, "--epochs 2 --log %s" % log).code == 0
    before = files_of(log)
    r = fit(sh, "--epochs 1 --log %s --overwrite; exit $?" % log, model="'linear 5 3'")  # 4 features in: fails
    assert r.code == 4 and "[shape_mismatch]" in r.err
    assert files_of(log) == before


def test_overwrite_and_version_refuse_what_they_cannot_mean(sh):
    for flags, code in (("--overwrite", "missing_argument"), ("--version", "missing_argument"),
                        ("--log %s --overwrite --resume auto" % sh.tmp("a"), "bad_argument"),
                        ("--log %s --version --resume auto" % sh.tmp("b"), "bad_argument"),
                        ("--log %s --version --overwrite" % sh.tmp("c"), "bad_argument")):
        r = fit(sh, flags + "; exit $?")
        assert r.code == 2 and "[%s]" % code in r.err, (flags, r.err)


def test_version_makes_one_more_than_the_highest_version_folder(sh):
    runs = sh.tmp("runs")
    r = fit(sh, "--log %s --version --monitor nope; exit $?" % runs)
    assert r.code == 2 and not os.path.exists(runs)  # a refused fit makes no folder
    r = fit(sh, "--log %s --version; exit $?" % runs)
    assert r.code == 0 and "torch: fit: logging to %s/version_0\n" % runs in r.err
    for name in ("version_7", "version_x", "version_3"):
        os.mkdir(os.path.join(runs, name))
    open(os.path.join(runs, "version_9"), "w").close()  # a file: not a version (Lightning counts folders)
    r = fit(sh, "--log %s --version; exit $?" % runs)
    assert r.code == 0 and "logging to %s/version_8\n" % runs in r.err
    assert epochs_logged(os.path.join(runs, "version_8")) == [1]
    assert sorted(os.listdir(runs)) == ["version_0", "version_3", "version_7", "version_8", "version_9", "version_x"]


def test_resume_auto_of_a_run_without_a_checkpoint_is_refused_rather_than_dropping_its_logs(sh):
    log = sh.tmp("run")
    assert fit(sh, "--epochs 2 --log %s" % log).code == 0
    os.remove(os.path.join(log, "last.safetensors"))  # a run that ended before its first checkpoint
    before = files_of(log)
    r = fit(sh, "--epochs 2 --log %s --resume auto; exit $?" % log)
    assert r.code == 3 and "[run_exists]" in r.err and "no last.safetensors" in r.err and "--overwrite" in r.err
    assert files_of(log) == before
