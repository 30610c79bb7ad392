"""jobs/: the runner, its per-step use of the tensor lock, stopping, and what followers see, with a
small generator for work (run_fit's shape: work(report, should_stop)) in-process."""
import contextlib
import json
import threading
import time

from torchsh.context import Context
from torchsh.daemon.app import FairLock, Hooks
from torchsh.errors import TorchshError
from torchsh.jobs import follow, job as jobs, render
from torchsh.jobs.running import RunningJobs
from torchsh.registry import Registry
from torchsh.results import Follow


class App:
    """What a job needs of the daemon's App: the registry, the FIFO tensor lock, the running jobs and the hooks."""

    def __init__(self):
        self.registry, self._lock, self.log_path = Registry(), FairLock(), "torchd.log"
        self.jobs, self.hooks = RunningJobs(), Hooks(step=lambda: None, request=lambda op, values: None)

    @contextlib.contextmanager
    def tensor_lock(self, op=None):
        with self._lock:
            yield

    def lock_waiters(self):
        return self._lock.waiting()


def counting(epochs, batches, steps=None, gate=None, fail_at=None):
    """Work that counts steps in `steps` (a list), reporting like run_fit; `gate` (an Event) holds each step."""
    steps = steps if steps is not None else []

    def work(report, should_stop):
        for epoch in range(1, epochs + 1):
            for batch in range(1, batches + 1):
                if should_stop():
                    report({"event": "stopped", "epoch": epoch, "step": len(steps)})
                    return
                if gate is not None:
                    gate.wait()
                if fail_at == len(steps) + 1:
                    raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x3 and 2x1)")
                steps.append((epoch, batch))
                report({"event": "batch", "epoch": epoch, "batch": batch, "batches": batches,
                        "loss": 1.0 / len(steps), "rate": 10.0, "eta_s": 3.0, "step": len(steps)})
            report({"event": "epoch", "kind": "epoch", "epoch": epoch, "step": len(steps), "loss": 0.5 / epoch,
                    "lr": 0.1, "seconds": 0.25})
        report({"event": "done", "epoch": epochs, "step": len(steps)})
    return work


def run_to_end(work, verb="fit"):
    ctx = Context(App())
    job = jobs.start(ctx, verb, work)
    job.wait_for(10 ** 9, 10.0)
    while job.running():
        job.wait_for(len(job.events), 10.0)
    return ctx, job


def test_a_done_job_shows_a_header_and_one_row_per_epoch_and_exits_0():
    ctx, job = run_to_end(counting(epochs=3, batches=4))
    assert (job.state, job.exit) == ("done", 0)
    out = follow.everything(job).stdout.splitlines()
    assert out[0].split() == ["epoch", "step", "loss", "lr", "seconds"]
    assert [line.split()[:3] for line in out[1:]] == [["1", "4", "0.5"], ["2", "8", "0.25"], ["3", "12", "0.166667"]]
    rows = [json.loads(line) for line in follow.everything(job, as_json=True).stdout.splitlines()]
    assert [r["epoch"] for r in rows] == [1, 2, 3] and rows[2]["step"] == 12
    assert ctx.registry.get(job.handle, "job") is job


def test_each_step_boundary_calls_the_step_hook_the_app_hands_in_and_a_running_job_counts_among_its_jobs():
    app, steps, seen = App(), [], []
    app.hooks = Hooks(step=lambda: seen.append((len(steps), app.jobs.any_running())), request=app.hooks.request)
    job = jobs.start(Context(app), "fit", counting(epochs=2, batches=3, steps=steps))
    while job.running():
        job.wait_for(len(job.events), 10.0)
    assert seen == [(n, True) for n in range(6)]  # before each of the 6 steps, while the job ran
    assert not app.jobs.any_running() and not app.jobs.in_use(job)


def test_plain_progress_is_one_line_per_epoch_without_carriage_returns():
    _, job = run_to_end(counting(epochs=2, batches=5))
    err = follow.everything(job).stderr
    assert "\r" not in err
    assert [line.split()[:4] for line in err.splitlines()] == [["epoch", "1", "batch", "5/5"],
                                                              ["epoch", "2", "batch", "5/5"]]


def test_a_followers_polls_carry_each_event_once_in_order_one_stream_per_poll():
    _, job = run_to_end(counting(epochs=3, batches=2))
    offset, seen = 0, []
    while True:
        p = render.poll(job, "logs", offset)
        assert not (p.stdout and p.stderr)
        seen.append(p.stdout + p.stderr)
        if p.ended:
            break
        offset = p.offset
    whole = follow.everything(job)
    lines = "".join(seen).splitlines()
    assert sorted(lines) == sorted((whole.stdout + whole.stderr).splitlines())  # each event once
    assert [l.split()[0] for l in lines if l[:1].isdigit()] == ["1", "2", "3"]  # rows in order
    assert lines.index("epoch 2  batch 2/2  10.0 batch/s  ETA 0:03  loss 0.25") < lines.index(
        next(l for l in lines if l.startswith("2 ")))  # progress and rows interleave as they happened


def test_a_terminal_follower_gets_a_live_progress_line_redrawn_with_carriage_returns():
    gate = threading.Event()
    ctx = Context(App(), stderr_is_tty=True)
    job = jobs.start(ctx, "fit", counting(epochs=1, batches=3, gate=gate))
    try:
        while job.progress is None:
            gate.set()
            gate.clear()
            job.wait_for(0, 0.01)
        live = follow.reply(ctx, job, "run", len(job.events))
        assert live.stderr.startswith("\r") and "batch 1/3" in live.stderr and not live.stdout
        assert follow.reply(Context(ctx.app), job, "run", len(job.events)).stderr == ""  # not a terminal
    finally:
        gate.set()


def test_stop_ends_at_a_step_boundary_with_the_last_completed_step_and_status_130():
    gate, steps = threading.Event(), []
    ctx = Context(App())
    job = jobs.start(ctx, "fit", counting(epochs=5, batches=10, steps=steps, gate=gate))
    for _ in range(7):  # let exactly a few steps through
        gate.set()
        gate.clear()
        while len(steps) < _ + 1 and job.running():
            job.wait_for(len(job.events), 0.01)
    job.request_stop()
    gate.set()
    while job.running():
        job.wait_for(len(job.events), 1.0)
    assert (job.state, job.exit) == ("stopped", jobs.EXIT_STOPPED)
    done = len(steps)
    assert done >= 7 and job.position == (steps[-1][0], done)
    assert follow.everything(job).stderr.splitlines()[-1] == "torch: fit: stopped at epoch %d step %d" % (
        steps[-1][0], done)
    assert follow.reply(ctx, job, "stop").stdout == "stopped at epoch %d step %d\n" % (steps[-1][0], done)


def test_requests_waiting_for_the_tensor_lock_run_between_steps():
    gate, steps = threading.Event(), []
    app = App()
    job = jobs.start(Context(app), "fit", counting(epochs=1, batches=1000, steps=steps, gate=gate))
    opener = threading.Timer(0.2, gate.set)  # the first step waits at the gate, holding the lock
    opener.start()
    with app.tensor_lock():  # a command, queued behind the job: it runs at the next step boundary
        held_at = len(steps)
        for _ in range(20):
            job.wait_for(len(job.events), 0.01)  # the gate is open: only the lock holds the job now
        assert len(steps) == held_at and job.running()
    job.request_stop()
    while job.running():
        job.wait_for(len(job.events), 1.0)
    assert held_at >= 1 and job.state == "stopped"


def test_a_failing_step_fails_the_job_with_one_line_and_the_errors_status():
    _, job = run_to_end(counting(epochs=2, batches=3, fail_at=5))
    assert job.state == "failed" and job.exit == 4
    last = follow.everything(job).stderr.splitlines()[-1]
    assert last.startswith("torch: fit: ") and last.endswith("[shape_mismatch]")


def test_a_torchsh_error_keeps_its_code():
    def work(report, should_stop):
        raise TorchshError("file_error", "cannot write /x/metrics.jsonl", "check the folder")
    _, job = run_to_end(work)
    assert job.exit == 6 and "[file_error]" in follow.everything(job).stderr


def test_follow_reply_names_the_next_poll_until_the_job_ends():
    gate = threading.Event()
    ctx = Context(App())
    job = jobs.start(ctx, "fit", counting(epochs=2, batches=2, gate=gate))
    r = follow.reply(ctx, job, "wait", 0)
    gate.set()
    hops, out = 0, r.stdout
    while isinstance(r, Follow):
        stops, _, words = r.field().partition(" ")
        assert stops == "0" and words.startswith("job poll %s wait --offset " % job.handle)
        r = follow.reply(ctx, job, "wait", int(words.split()[-1]), wait=1.0)
        out += r.stdout
        hops += 1
    assert r.exit == 0 and hops >= 1 and len(out.splitlines()) == 3  # the header and two rows, once each


def test_a_foreground_run_whose_follower_stops_polling_stops_at_a_step_boundary(monkeypatch):
    """The lease: a "run" poll renews it; a follower silent for LEASE_S (Ctrl-C in nu, a killed client) stops
    the job at its next step boundary, and its last line says why."""
    monkeypatch.setattr(jobs, "LEASE_S", 0.2)
    ctx = Context(App())
    job = jobs.start(ctx, "fit", counting(epochs=10 ** 6, batches=10))
    follow.reply(ctx, job, "run", 0)
    assert job.lease_until is not None
    deadline = time.monotonic() + 60
    while job.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.state == "stopped" and job.exit == jobs.EXIT_STOPPED
    assert follow.everything(job).stderr.splitlines()[-1].endswith("its follower went away (no poll for 0.2s)")


def test_a_detached_job_has_no_lease():
    ctx = Context(App())
    job = jobs.start(ctx, "fit", counting(epochs=1, batches=1))
    follow.reply(ctx, job, "wait", 0)
    assert job.lease_until is None
