"""A foreground job belongs to its follower (docs/jobs.md): a fit over the JSON API without a follow reply is
a job too (listed, answering other commands between its steps) that stops at a step boundary when its client
disconnects; `torch daemon stop` stops running jobs at a step boundary, their checkpoints written, and does
not wait out its grace period for them."""
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from torchsh.jobs.job import LEASE_S

from support.waiting import wait_until

pytestmark = pytest.mark.slow  # several shells and daemons a test: tests/conftest.py's rule


def _jobs(s):
    return json.loads(s("torch job list --json") or "[]")


def _make(s, epochs):
    m = s("torch nn linear 2 1")
    o = s("torch optim sgd %s --lr 0.1" % m)
    L = s("torch data loader $(torch data tensors $(torch randn 640 2) $(torch randn 640 1)) --batch_size 16")
    return m, o, L


def test_an_api_fit_is_a_job_that_answers_others_and_stops_when_its_client_disconnects(sh):
    m, o, L = _make(sh, 100000)
    before = {j["handle"] for j in _jobs(sh)}
    body = json.dumps({"args": [m, o, L], "kwargs": {"epochs": 100000}}).encode()
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(sh.socket)
    conn.sendall(b"POST /v1/ops/fit HTTP/1.1\r\nHost: torchd\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    try:
        assert wait_until(lambda: any(j["handle"] not in before and j["state"] == "running" for j in _jobs(sh)), 60)
        job = next(j["handle"] for j in _jobs(sh) if j["handle"] not in before)
        assert sh("torch randn 3 | torch numel | torch value") == "3"  # answered between two of its steps
    finally:
        conn.close()
    assert wait_until(lambda: job not in {j["handle"] for j in _jobs(sh) if j["state"] == "running"}, 60)
    with open(sh.socket[:-5] + ".log") as f:
        assert "stopping %s at its next step boundary: its client disconnected" % job in f.read()


def test_daemon_stop_stops_a_running_job_at_a_step_boundary_with_its_checkpoint(fresh_sh, tmp_path):
    s = fresh_sh()
    m, o, L = _make(s, 100000)
    log = tmp_path / "run"
    job = s("torch fit %s %s %s --epochs 100000 --log %s --detach" % (m, o, L, log))
    assert wait_until(lambda: any(j["handle"] == job and j["progress"] != "-" for j in _jobs(s)), 60)
    assert s("torch daemon stop").startswith("torchd stopped")
    with open(os.path.join(s.folder, "torchd.log")) as f:
        text = f.read()
    assert "stopping %s at its next step boundary: the daemon is stopping" % job in text
    assert "grace period over" not in text  # it waited for the job to stop, not for the grace to run out
    assert (log / "last.safetensors").is_file()
    rows = [json.loads(line) for line in (log / "metrics.jsonl").read_text().splitlines()]
    assert rows, "the run wrote no metrics before it stopped"


def _killed_follower(sh, script, state):
    """The job a bash SCRIPT starts and follows, once it is in STATE; its follower then killed (-9, the whole
    process group: the shell and its client)."""
    before = {j["handle"] for j in _jobs(sh)}
    p = subprocess.Popen(["bash", "-c", script], env=sh.env, cwd=sh.folder, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_until(lambda: any(j["handle"] not in before and j["state"] == state for j in _jobs(sh)), 60)
        return next(j["handle"] for j in _jobs(sh) if j["handle"] not in before)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


@pytest.mark.parametrize("caller", ["client", "bash"])
def test_a_killed_follower_leaves_its_foreground_fit_to_stop_at_a_step_boundary(sh, caller):
    """kill -9 of the client (or of the shell whose function follows the run): nobody polls, and the daemon
    stops the run once its lease has run out; the log says why."""
    m, o, L = _make(sh, 100000)
    line = "torch fit %s %s %s --epochs 100000" % (m, o, L)
    job = _killed_follower(sh, line if caller == "client" else 'eval "$(torch init bash)"; ' + line, "running")
    assert wait_until(lambda: job not in {j["handle"] for j in _jobs(sh) if j["state"] == "running"}, 60)
    with open(sh.socket[:-5] + ".log") as f:
        assert "stopping %s at its next step boundary: its follower went away" % job in f.read()


def test_a_queued_fit_whose_follower_was_killed_never_starts(sh, tmp_path):
    """Its lease runs out while it waits behind another job: when its turn comes it stops before its work runs
    (no log folder written, no step taken), and the daemon's log says why."""
    m, o, L = _make(sh, 100000)
    ahead = sh("torch fit %s %s %s --epochs 100000 --detach" % (m, o, L))
    m2, o2, L2 = _make(sh, 100000)
    queued = _killed_follower(sh, "torch fit %s %s %s --epochs 100000 --log %s" % (m2, o2, L2, tmp_path / "run"),
                              "queued")
    time.sleep(LEASE_S + 1)  # its lease runs out while it waits
    sh("torch job stop %s >/dev/null" % ahead)
    assert wait_until(lambda: queued not in {j["handle"] for j in _jobs(sh)}, 60)
    assert not (tmp_path / "run").exists()
    with open(sh.socket[:-5] + ".log") as f:
        text = f.read()
    assert "stopping %s at its next step boundary: its follower went away" % queued in text
    assert "%s stopped (its follower had left)" % queued in text
