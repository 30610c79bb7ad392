"""A fit's job as its history entry sees it: running until its work returns, then done or stopped where the run
ended, failed when it raised, stopped before it started when it never ran; a session file keeps the end (a job
still running there as unknown), and an end a file plants that saved() does not spell reads as unknown."""
import gc
import types

import pytest

from torchsh.history import jobrun, persist
from torchsh.history.log import Entry, HistoryLog
from torchsh.jobs import Job


def _job(handle="job://7", ended=None):
    job = Job("fit")
    job.handle, job.ended = handle, ended
    return job


def _result(reason, epoch, step):
    return types.SimpleNamespace(reason=reason, epoch=epoch, step=step)


def test_the_end_is_running_while_the_work_runs_then_where_it_returned():
    run, job, seen = jobrun.JobRun(), _job(), []
    work = run.wrap(lambda report, should_stop: seen.append(run.end()) or _result("stopped", 3, 41))
    run.started(job)
    assert run.end() == {"state": "running", "handle": "job://7"}  # queued: its work has not begun
    assert work(None, None).step == 41
    assert seen == [{"state": "running", "handle": "job://7"}]
    assert run.end() == {"state": "stopped", "reason": "stopped", "epoch": 3, "step": 41, "handle": "job://7"}
    done = jobrun.JobRun()
    done.wrap(lambda report, should_stop: _result("max_steps", 1, 5))(None, None)
    assert done.end()["state"] == "done" and done.end()["reason"] == "max_steps"


def test_a_work_that_raises_is_failed_and_one_that_never_ran_was_stopped_before_it_started():
    run = jobrun.JobRun()
    run.started(_job())

    def fails(report, should_stop):
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        run.wrap(fails)(None, None)
    assert run.end()["state"] == "failed"
    never, job = jobrun.JobRun(), _job(ended=1.0)
    never.wrap(fails)
    never.started(job)
    assert never.end()["state"] == "never_started"
    del job
    gc.collect()  # a job nobody holds any more has ended: only a queued or running job is held (its thread)
    assert never.end() == {"state": "never_started", "handle": "job://7"}


def test_a_session_file_keeps_the_end_and_a_running_job_as_unknown(tmp_path):
    stopped, running = jobrun.JobRun(), jobrun.JobRun()
    stopped.wrap(lambda report, should_stop: _result("stopped", 2, 9))(None, None)
    stopped.started(_job("job://a1"))
    job = _job("job://a2")
    running.started(job)
    log = HistoryLog()
    for run in (stopped, running):
        log.add(Entry(0, "fit", {}, [], made={"job": run}))
    persist.save(log, str(tmp_path))
    back = HistoryLog()
    persist.load(back, str(tmp_path))
    ends = [jobrun.end_of(e.made["job"]) for e in back.entries()]
    assert ends == [{"handle": "job://a1", "state": "stopped", "reason": "stopped", "epoch": 2, "step": 9},
                    {"handle": "job://a2", "state": "unknown"}]


@pytest.mark.parametrize("planted", [{"handle": "job://1\nimport os", "state": "done", "epoch": 1, "step": 1},
                                     {"handle": "job://1", "state": "stopped", "epoch": 1, "step": "1; x"},
                                     {"handle": "job://1", "state": "finished"}, {"state": "done"}])
def test_an_end_a_file_plants_reads_as_unknown(planted):
    assert jobrun.end_of(planted)["state"] == "unknown"
