"""`torch sweep` stopped and resumed: a stopped sweep runs the interrupted trial again, a resume after
`kill -9` keeps the finished trials and reruns the one cut short, and two daemons share one SQLite study
without running a trial twice."""
import json
import os
import signal

import optuna
import pytest
import torch

from support.second_daemon import SecondDaemon
from support.sweeps import SWEEP, journal, loaders
from support.waiting import wait_until


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
