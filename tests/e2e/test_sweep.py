"""`torch sweep`: trials are `fit` runs a user could repeat alone (the oracle: the same fit typed by hand),
told to an Optuna study that Python's optuna reads back; pruning, a stop and a `kill -9` mid-trial, and two
daemons sharing one SQLite study."""
import json
import os
import signal

import optuna
import pytest
import torch
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.plugins.hparams import api_pb2, metadata as hparams_metadata

from support.apicall import post
from support.second_daemon import SecondDaemon
from support.waiting import wait_until

X = torch.randn(96, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (96,), generator=torch.Generator().manual_seed(2))
MODEL = "sequential 'linear 4 {width}' relu 'linear {width} 3'"
LOADERS = ("L=$(torch data loader $(torch data tensors {x} {y}) --batch_size {batch} --shuffle --seed 5); "
           "V=$(torch data loader $(torch data tensors {x} {y}) --batch_size 48 --seed 6); ")
SWEEP = ("torch sweep --model \"%s\" --opt 'adam --lr {lr}' --data $L --val $V --loss cross_entropy " % MODEL)


def loaders(shell, batch=16, x=X, y=Y):
    """The script lines that make $L and $V on the daemon `shell` talks to (the data goes by file)."""
    sh = getattr(shell, "sh", shell)
    paths = []
    for t in (x, y):
        paths.append(sh.tmp("data.pt"))
        torch.save(t, paths[-1])
    return LOADERS.format(x="$(torch load %s)" % paths[0], y="$(torch load %s)" % paths[1], batch=batch)


def journal(log):
    """The study as Python's optuna reads it: named in sweep.json (the --log folder's name by default)."""
    with open(os.path.join(log, "sweep.json")) as f:
        name = json.load(f)["study"]
    assert name == os.path.basename(log)
    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(os.path.join(log, "study.journal"))))


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


def slow_sweep(shell, log, flags=""):
    """Trials of ~1 s each (a large loader, batch 4): a stop or a kill lands inside one."""
    x = torch.randn(2048, 4, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 3, (2048,), generator=torch.Generator().manual_seed(2))
    return (loaders(shell, batch=4, x=x, y=y) + SWEEP.replace("{width}", "8")
            + "--space 'lr: loguniform(1e-3,1e-1)' --trials 4 --epochs 2 --seed 2 --pruner none --vectorize 1 "
              "--log %s %s" % (log, flags))


def started(log, number):
    """Trial `number` has made an optimizer step (its metrics.jsonl has a row)."""
    try:
        return os.path.getsize(os.path.join(log, "trial_%04d" % number, "metrics.jsonl")) > 0
    except OSError:
        return False


@pytest.mark.slow
def test_a_stopped_sweep_resumes_running_the_interrupted_trial_again(sh):
    log = sh.tmp("stopped")
    job = sh(slow_sweep(sh, log, "--detach"))
    assert wait_until(lambda: started(log, 1), timeout=120)
    r = sh.run("torch job stop %s; torch job wait %s" % (job, job))
    assert r.code == 130 and "stopped at trial 1" in r.err, r.err
    before = journal(log)
    assert [t.state.name for t in before.trials][:2] == ["COMPLETE", "FAIL"]
    rows = [json.loads(line) for line in sh(slow_sweep(sh, log, "--resume --json")).splitlines()]
    after = journal(log)
    repeat = [t for t in after.trials if t.user_attrs.get("repeats") == 1]
    assert len(repeat) == 1 and repeat[0].state.name == "COMPLETE" and repeat[0].params == before.trials[1].params
    assert after.trials[0].value == before.trials[0].value  # kept, not run again
    assert sum(t.state.name == "COMPLETE" for t in after.trials) == 4
    assert [r["trial"] for r in rows] == [t.number for t in after.trials[2:]]


@pytest.mark.slow
def test_resume_after_kill_9_keeps_finished_trials_and_reruns_the_one_cut_short(fresh_sh):
    s = fresh_sh()
    log = s.tmp("killed")
    s(slow_sweep(s, log, "--detach"))
    assert wait_until(lambda: started(log, 1), timeout=120)
    pid = json.loads(s("torch daemon status --json"))["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not os.path.exists("/proc/%d" % pid))
    before = journal(log)
    assert [t.state.name for t in before.trials][:2] == ["COMPLETE", "RUNNING"]
    r = s.run(slow_sweep(s, log, "--resume --json"))  # a new daemon starts here
    assert r.code == 0 and "1 trial(s) interrupted by a killed daemon run again" in r.err, r.err
    after = journal(log)
    assert after.trials[1].state.name == "FAIL"
    repeat = [t for t in after.trials if t.user_attrs.get("repeats") == 1]
    assert len(repeat) == 1 and repeat[0].state.name == "COMPLETE" and repeat[0].params == before.trials[1].params
    assert after.trials[0].value == before.trials[0].value
    assert sum(t.state.name == "COMPLETE" for t in after.trials) == 4


@pytest.mark.slow
def test_two_daemons_share_one_sqlite_study_and_no_trial_runs_twice(sh):
    db = sh.tmp("shared.db")
    storage = "sqlite:///%s" % db
    second = SecondDaemon(sh)
    try:
        first_log, second_log = sh.tmp("w1"), sh.tmp("w2")
        job = sh(slow_sweep(sh, first_log, "--storage %s --study shared --detach" % storage).replace(
            "--trials 4", "--trials 6"))
        assert wait_until(lambda: started(first_log, 0), timeout=120)
        joined = second(loaders(second, batch=4, x=torch.randn(2048, 4, generator=torch.Generator().manual_seed(1)),
                                y=torch.randint(0, 3, (2048,), generator=torch.Generator().manual_seed(2)))
                        + "torch sweep --join shared --storage %s --data $L --val $V --vectorize 1 --log %s --json"
                        % (storage, second_log))
        sh("torch job wait %s >/dev/null" % job)
    finally:
        second.stop()
    study = optuna.load_study(study_name="shared", storage=storage)
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    by_second = {json.loads(line)["trial"] for line in joined.splitlines()}
    by_first = {t.number for t in done} - by_second
    assert by_second and by_first and len(done) >= 6
    workers = {t.number: t.user_attrs["worker"] for t in done}
    assert len({workers[n] for n in by_second}) == 1 and len({workers[n] for n in by_first}) == 1
    assert {workers[n] for n in by_second} != {workers[n] for n in by_first}
    assert sorted(os.listdir(second_log)) == ["sweep.json"] + ["trial_%04d" % n for n in sorted(by_second)]


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
