"""`torch sweep`: trials are `fit` runs a user could repeat alone (the oracle: the same fit typed by hand),
told to an Optuna study that Python's optuna reads back; pruning, refusals, trials trained together, the JSON
API, and the run folders. A stop, a `kill -9` mid-trial and two daemons sharing one SQLite study:
test_sweep_resume.py."""
import json
import os

import optuna
import pytest
import torch
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.plugins.hparams import api_pb2, metadata as hparams_metadata

from support.apicall import post
from support.sweeps import MODEL, SWEEP, journal, loaders


def epoch_rows(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["kind"] == "epoch"]


def run_json(folder):
    with open(os.path.join(folder, "run.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def swept(sh):
    """Five trials of a seeded TPE sweep, one at a time (--vectorize 1), pruning off."""
    log = sh.tmp("s1")
    out = sh(loaders(sh) + SWEEP + "--space 'width: [8,16]; lr: loguniform(1e-3,1e-1)' --trials 5 --epochs 2 "
             "--seed 3 --pruner none --vectorize 1 --log %s --json" % log)
    return log, [json.loads(line) for line in out.splitlines()]


def test_each_trial_is_a_row_and_the_study_python_reads_holds_the_same_values(swept):
    log, rows = swept
    assert [r["trial"] for r in rows] == [0, 1, 2, 3, 4] and {r["state"] for r in rows} == {"complete"}
    study = journal(log)
    assert [t.number for t in study.trials] == [0, 1, 2, 3, 4]
    for row, trial in zip(rows, study.trials):
        assert trial.state == optuna.trial.TrialState.COMPLETE
        assert trial.params == {"width": row["width"], "lr": row["lr"]}
        folder = os.path.join(log, "trial_%04d" % row["trial"])
        assert trial.value == row["val_loss"] == min(r["val_loss"] for r in epoch_rows(folder))
        assert row["epochs"] == 2 and row["width"] in (8, 16) and 1e-3 <= row["lr"] <= 1e-1


def test_a_trial_repeats_bit_for_bit_as_the_fit_its_run_json_describes(sh, swept):
    log, rows = swept
    for number in (0, 3):
        folder = os.path.join(log, "trial_%04d" % number)
        trial = run_json(folder)["trial"]
        assert trial["params"] == {"width": rows[number]["width"], "lr": rows[number]["lr"]}
        opt = trial["opt"].split()
        script = (loaders(sh) + "torch manual_seed %d; m=$(torch nn %s); o=$(torch optim %s $m %s); "
                  "torch fit $m $o $L --loss cross_entropy --val $V --epochs 2 --json"
                  % (trial["seed"], trial["model"], opt[0], " ".join(opt[1:])))
        alone = [json.loads(line) for line in sh(script).splitlines()]
        swept_rows = epoch_rows(folder)
        assert [(r["loss"], r["val_loss"]) for r in alone] == [(r["loss"], r["val_loss"]) for r in swept_rows]


def test_runs_ls_lists_the_trials_with_the_values_they_tried(sh, swept):
    log, rows = swept
    listed = json.loads(sh("torch runs ls %s --json" % log))
    assert [r["name"] for r in listed] == ["trial_%04d" % r["trial"] for r in rows]
    assert [(r["lr"], r["status"]) for r in listed] == [(r["lr"], "finished") for r in rows]
    assert [r["best"] for r in listed] == [r["val_loss"] for r in rows]


def test_median_pruning_stops_a_trial_early_fed_by_its_epoch_rows_and_says_so(sh):
    log = sh.tmp("pruned")
    out = sh(loaders(sh) + SWEEP.replace("{width}", "8") + "--space 'lr: [1e-9, 0.05]' --sampler random --seed 1 "
             "--trials 10 --epochs 4 --pruner median --vectorize 1 --log %s --json" % log)
    rows = [json.loads(line) for line in out.splitlines()]
    pruned = [r for r in rows if r["state"] == "pruned"]
    assert pruned and all(r["epochs"] < 4 for r in pruned), rows
    listed = {r["name"]: r["status"] for r in json.loads(sh("torch runs ls %s --json" % log))}
    trials = {t.number: t for t in journal(log).trials}
    for r in rows:
        folder = "trial_%04d" % r["trial"]
        epochs = epoch_rows(os.path.join(log, folder))
        assert len(epochs) == r["epochs"]
        # the pruner saw each epoch's val_loss at its epoch, and nothing past where it stopped the trial
        assert trials[r["trial"]].intermediate_values == {e["epoch"]: e["val_loss"] for e in epochs}
        assert trials[r["trial"]].state.name == r["state"].upper()
        if r["state"] == "pruned":
            assert listed[folder] == "pruned"
            assert run_json(os.path.join(log, folder))["ended"]["reason"] == "pruned"
        assert tensorboard_status(os.path.join(log, folder)) == (
            api_pb2.STATUS_FAILURE if r["state"] == "pruned" else api_pb2.STATUS_SUCCESS)


def tensorboard_status(folder):
    """The Status column TensorBoard's HParams tab shows for a run folder."""
    acc = event_accumulator.EventAccumulator(folder, size_guidance={event_accumulator.TENSORS: 0})
    acc.Reload()
    content = acc.SummaryMetadata(hparams_metadata.SESSION_END_INFO_TAG).plugin_data.content
    return hparams_metadata.parse_session_end_info_plugin_data(content).status


def test_a_placeholder_the_space_does_not_define_is_refused_before_any_trial(sh):
    r = sh.run(loaders(sh) + SWEEP + "--space 'width: [8]; rate: [0.1]' --trials 1")
    assert r.code == 2 and "--opt uses {lr}, which --space does not define" in r.err, r.err
    r = sh.run(loaders(sh) + SWEEP + "--space 'width: [8]; lr: [0.1]; wd: [0.1]' --trials 1")
    assert "--space defines wd, which neither --model nor --opt uses" in r.err


def test_grid_needs_lists_and_a_new_sweep_never_overwrites_one(sh, swept):
    log, _ = swept
    r = sh.run(loaders(sh) + SWEEP + "--space 'width: [8]; lr: loguniform(1e-3,1e-1)' --sampler grid")
    assert r.code == 2 and "--sampler grid needs a list of values for every entry; lr is a range" in r.err, r.err
    r = sh.run(loaders(sh) + SWEEP + "--space 'width: [8]; lr: [0.1]' --log %s" % log)
    assert "holds a sweep" in r.err and "[run_exists]" in r.err


def test_a_sweep_leaves_the_rng_and_the_loaders_as_they_were(sh):
    torch.manual_seed(0)
    want = torch.randn(3)
    script = (loaders(sh) + "torch manual_seed 0; " + SWEEP.replace("{width}", "8")
              + "--space 'lr: [0.1, 0.2]' --trials 2 --seed 1 --vectorize 1 >/dev/null; "
              "torch save $(torch randn 3) %s; torch save $(torch data next $L | head -1) %s")
    after, first = sh.tmp("after.pt"), sh.tmp("first.pt")
    sh(script % (after, first))
    assert torch.equal(torch.load(after), want)
    fresh = sh.tmp("fresh.pt")
    sh(loaders(sh) + "torch save $(torch data next $L | head -1) %s" % fresh)
    assert torch.equal(torch.load(first), torch.load(fresh))


def test_trials_trained_together_equal_the_same_trials_trained_one_at_a_time(sh):
    runs = {}
    for vectorize in (1, 4):
        log = sh.tmp("v%d" % vectorize)
        r = sh.run(loaders(sh) + SWEEP + "--space 'width: [8]; lr: loguniform(1e-3,1e-1)' --sampler random --seed 7 "
                   "--trials 4 --epochs 3 --pruner none --vectorize %d --log %s --json" % (vectorize, log))
        assert r.code == 0, r.err
        runs[vectorize] = log, [json.loads(line) for line in r.out.splitlines()]
    (alone_log, alone), (together_log, together) = runs[1], runs[4]
    assert [(r["trial"], r["lr"], r["state"]) for r in together] == [(r["trial"], r["lr"], r["state"]) for r in alone]
    for a, t in zip(alone, together):
        assert abs(a["val_loss"] - t["val_loss"]) <= 1e-6
        folder = "trial_%04d" % a["trial"]
        for ra, rt in zip(epoch_rows(os.path.join(alone_log, folder)), epoch_rows(os.path.join(together_log, folder))):
            assert abs(ra["loss"] - rt["loss"]) <= 1e-6 and abs(ra["val_loss"] - rt["val_loss"]) <= 1e-6


def test_the_caller_is_told_how_trials_train_and_why_not_together(sh):
    r = sh.run(loaders(sh) + SWEEP.replace("'linear 4 {width}' relu", "'linear 4 {width}' relu 'dropout --p 0.1'")
               + "--space 'width: [8]; lr: [0.01, 0.02]' --sampler grid --trials 2 --pruner none --vectorize 2")
    assert r.code == 0 and "trials 0,1 train one at a time: Dropout draws random numbers" in r.err, r.err
    r = sh.run(loaders(sh) + SWEEP + "--space 'width: [8]; lr: [0.01, 0.02]' --sampler grid --trials 2 --vectorize 2")
    assert r.code == 0 and "trials 0,1 train together as one vectorised model" in r.err, r.err


def test_the_json_api_gives_the_trials_as_bash_json_rows_and_refusals_as_codes(sh):
    make = loaders(sh)
    bash = [json.loads(line) for line in sh(make + SWEEP + "--space 'width: [8]; lr: [0.01, 0.1]' --sampler grid "
                                            "--seed 2 --pruner none --json").splitlines()]
    data = sh(make + "echo $L")
    kwargs = {"data": data, "model": MODEL, "opt": "adam --lr {lr}", "space": "width: [8]; lr: [0.01, 0.1]",
              "sampler": "grid", "seed": 2, "pruner": "none", "loss": "cross_entropy"}
    status, reply = post(sh, "sweep", {"kwargs": kwargs})
    assert status == 200 and [(r["trial"], r["lr"], r["state"]) for r in reply["result"]] == [
        (r["trial"], r["lr"], r["state"]) for r in bash]
    status, reply = post(sh, "sweep", {"kwargs": dict(kwargs, space="width: [8]; lr: [0.1]; wd: [1]")})
    assert reply["error"]["code"] == "bad_argument" and "wd" in reply["error"]["message"]


def test_a_trial_whose_folder_holds_a_run_fails_and_leaves_that_run_alone(sh, swept):
    log, _ = swept
    joined = sh.tmp("joined")
    os.makedirs(joined)
    os.rename(os.path.join(log, "trial_0000"), os.path.join(joined, "trial_0000"))  # someone's run, no sweep.json
    before = open(os.path.join(joined, "trial_0000", "metrics.jsonl")).read()
    r = sh.run(loaders(sh) + SWEEP + "--space 'width: [8]; lr: [0.1]' --trials 1 --vectorize 1 --log %s --json"
               % joined)
    os.rename(os.path.join(joined, "trial_0000"), os.path.join(log, "trial_0000"))
    assert r.code == 0 and json.loads(r.out)["state"] == "failed" and "[run_exists]" in r.err, r.err
    assert open(os.path.join(log, "trial_0000", "metrics.jsonl")).read() == before


def test_a_joining_worker_keeps_the_folders_workers_and_refuses_another_studys_folder(sh, swept):
    log, _ = swept
    storage, here = "sqlite:///%s" % sh.tmp("joined.db"), sh.tmp("j1")
    sh(loaders(sh) + SWEEP + "--space 'width: [8]; lr: [0.1]' --trials 1 --epochs 1 --pruner none --vectorize 1 "
       "--storage %s --study joined --log %s --json >/dev/null" % (storage, here))
    join = loaders(sh) + "torch sweep --join joined --storage %s --data $L --val $V --vectorize 1 --log %%s" % storage
    r = sh.run(join % log)
    assert r.code == 3 and "holds the sweep of study %s;" % os.path.basename(log) in r.err, r.err
    assert r.err.endswith("[run_exists]\n")
    before = json.load(open(os.path.join(here, "sweep.json")))["workers"]
    sh(join % here + " >/dev/null")
    after = json.load(open(os.path.join(here, "sweep.json")))["workers"]
    assert len(before) == 1 and after[:1] == before and len(after) == 2
