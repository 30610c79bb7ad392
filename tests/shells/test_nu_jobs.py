"""Jobs from Nushell, as from bash: a foreground `torch fit` is a job (in `torch job list`, other commands
answered between its steps) leased to its follower, so Ctrl-C in nu stops it at a step boundary; `torch job
wait` blocks until the job ends and returns all of its rows."""
import json
import os
import signal
import subprocess
import tempfile
import time

import pytest

pytestmark = pytest.mark.slow  # several shells and daemons a test: tests/conftest.py's rule

LONG_FIT = """
let m = (torch nn linear 2 1)
let o = (torch optim sgd $m --lr 0.1)
let L = (torch data loader (torch data tensors (torch randn [640 2]) (torch randn [640 1])) --batch_size 16)
torch fit $m $o $L --loss mse_loss --epochs 100000
"""


def _jobs(sh):
    return json.loads(sh("torch job list --json") or "[]")


def _wait_for(what, condition, seconds=90):
    """Poll condition() until it is true (a deadline for a state to be reached, not a speed check)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s" % what)


def _start_nu(nu, script):
    with tempfile.NamedTemporaryFile("w", suffix=".nu", dir=nu.sh.folder, delete=False) as f:
        f.write("use %s\n%s\n" % (nu.module, script))
    return subprocess.Popen([nu.bin, "--no-config-file", f.name], env=nu.env, cwd=nu.sh.folder,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_ctrl_c_in_nu_stops_its_foreground_fit_at_a_step_boundary(nu, sh):
    before = {j["handle"] for j in _jobs(sh)}
    p = _start_nu(nu, LONG_FIT)
    try:
        job = _wait_for("the nu fit to show in `torch job list` as a running job", lambda: next(
            (j for j in _jobs(sh) if j["handle"] not in before and j["state"] == "running"), None))
        assert sh("torch randn 2 | torch numel | torch value") == "2"  # answered between two of its steps
        os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C on a terminal does: the whole foreground group
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    ended = _wait_for("the fit to stop once its follower left", lambda: next(
        (j for j in _jobs(sh) if j["handle"] == job["handle"] and j["state"] != "running"), None) or (
        None if any(j["handle"] == job["handle"] for j in _jobs(sh)) else {"state": "gone"}))
    assert ended["state"] in ("stopped", "gone")
    r = sh.run("torch daemon status --json")
    assert r.code == 0


def test_job_wait_in_nu_returns_every_row_and_the_exit_status(nu, sh):
    out = nu("""
let m = (torch nn linear 2 1)
let o = (torch optim sgd $m --lr 0.1)
let L = (torch data loader (torch data tensors (torch randn [64 2]) (torch randn [64 1])) --batch_size 16)
let j = (torch fit $m $o $L --loss mse_loss --epochs 3 --detach)
torch job wait $j | to json --raw | print
""")
    waited = json.loads(out)
    assert waited["exit"] == 0
    assert [r["epoch"] for r in waited["rows"]] == [1, 2, 3]
