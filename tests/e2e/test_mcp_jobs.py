"""`torch mcp`'s `jobs` tool through the official SDK's client, over stdio and streamable HTTP: a fit started
through it reports progress notifications to the client's progress_callback while `result` waits; a client
that cancels that wait leaves the job running; and a fit cancelled through `jobs cancel` leaves the checkpoint
from which `torch fit … --resume auto` continues to the same weights, bit for bit, as a run never stopped."""
import json
import os

import anyio
import pytest
import torch
from safetensors.torch import load_file

from support.mcpclient import mcp, sh  # noqa: F401  (fixtures)
from support.waiting import wait_until

X = torch.randn(50, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (50,), generator=torch.Generator().manual_seed(2))
# 7 batches an epoch; seeded, so the straight run and the stopped one start from the same objects
BUILD = ("torch manual_seed 0; m=$(torch nn sequential 'linear 4 16' relu 'linear 16 3'); "
         "o=$(torch optim adamw $m --lr 0.01); "
         "L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 8 --shuffle --seed 11); ")
EPOCHS = 60  # 420 steps: a cancel sent at its first batch lands mid-run, on a fast machine or a loaded one


def objects(sh):
    """(model, optimizer, loader) handles, made the same way every time."""
    out = sh(BUILD.format(x=sh.put(X), y=sh.put(Y)) + 'echo "$m $o $L"')
    return out.split()


def fit_argv(handles, log, epochs=EPOCHS):
    return ["fit", *handles, "--loss", "cross_entropy", "--epochs", str(epochs), "--log", log]


def started(session, argv):
    got = session.call("jobs", action="start", argv=argv)
    assert not got.is_error, got.text
    return json.loads(got.text)["job"]


def progress(session, job):
    got = session.call("jobs", action="progress", job=job)
    assert not got.is_error, got.text
    return json.loads(got.text)


def cancel(session, job):
    got = session.call("jobs", action="cancel", job=job)
    assert not got.is_error, got.text
    return json.loads(got.text)


def test_result_reports_progress_notifications_while_it_waits(sh, mcp):
    job = started(mcp, fit_argv(objects(sh), sh.tmp("progress-run"), epochs=100000))
    try:
        got = mcp.call("jobs", action="result", job=job, wait_s=2.5)
        assert not got.is_error, got.text
        assert json.loads(got.text.splitlines()[0])["state"] == "running"
        assert len(got.progress) >= 2, got.progress
        done = [p for p, _, _ in got.progress]
        assert done == sorted(done) and len(set(done)) == len(done)  # MCP: progress only grows
        assert all(total == 2.5 and job in message for _, total, message in got.progress)
        assert progress(mcp, job)["state"] == "running" and progress(mcp, job)["rows"] >= 1
    finally:
        assert cancel(mcp, job)["stopped"].startswith("stopped at epoch")


def test_a_client_that_cancels_the_wait_leaves_the_job_running(sh, mcp):
    job = started(mcp, fit_argv(objects(sh), sh.tmp("cancelled-wait"), epochs=100000))
    try:
        async def wait_then_give_up():
            with anyio.move_on_after(1.5):  # the SDK sends notifications/cancelled for the abandoned call
                await mcp.client.call_tool("jobs", {"action": "result", "job": job, "wait_s": 60})
                return "answered"
            return "gave up"
        assert mcp.portal.call(wait_then_give_up) == "gave up"
        before = progress(mcp, job)["rows"]
        assert wait_until(lambda: progress(mcp, job)["rows"] > before)
        assert progress(mcp, job)["state"] == "running"
    finally:
        cancel(mcp, job)


def trained(sh, handles, saved):
    sh("torch nn save %s %s" % (handles[0], saved))
    return load_file(saved)


@pytest.mark.slow
def test_a_fit_cancelled_through_jobs_resumes_from_its_checkpoint_to_the_straight_runs_weights(sh, mcp):
    straight = objects(sh)
    sh("torch " + " ".join(fit_argv(straight, sh.tmp("straight"))) + " >/dev/null")
    want = trained(sh, straight, sh.tmp("straight.safetensors"))

    handles, log = objects(sh), sh.tmp("stopped")
    job = started(mcp, fit_argv(handles, log))
    assert wait_until(lambda: progress(mcp, job)["progress"] != "-")  # a batch done: it runs
    stopped = cancel(mcp, job)
    assert stopped["stopped"].startswith("stopped at epoch"), stopped  # not "already done": it was mid-run
    step = int(stopped["stopped"].split(" step ")[1].split()[0])
    assert stopped["checkpoint"] == os.path.join(log, "last.safetensors") and os.path.exists(stopped["checkpoint"])
    assert stopped["resume_argv"] == fit_argv(handles, log) + ["--resume", "auto"]

    again = started(mcp, stopped["resume_argv"])  # what the agent is told to do, through the same tool
    got = mcp.call("jobs", action="result", job=again, wait_s=120)
    assert not got.is_error and json.loads(got.text.splitlines()[0])["state"] == "done", got.text
    resumed = trained(sh, handles, sh.tmp("resumed.safetensors"))
    assert all(torch.equal(resumed[k], want[k]) for k in want)
    with open(os.path.join(log, "run.json")) as f:
        assert json.load(f)["resumed"][0]["step"] == step
    with open(os.path.join(log, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    assert [r["epoch"] for r in rows if r["kind"] == "epoch"] == list(range(1, EPOCHS + 1))
