"""`torch daemon log [-f] [-n N]`: the daemon's own log, followed until Ctrl-C, rotated by size."""
import json
import os
import select
import signal
import subprocess

import pytest

from support.waiting import wait_until


def _log_lines(s, n):
    return s("torch daemon log -n %d" % n).split("\n")


def test_daemon_log_prints_the_last_lines_of_the_log(fresh_sh):
    s = fresh_sh()
    lines = _log_lines(s, 3)  # "serving", then maybe "fast path on …" when the suite runs through it
    assert 1 <= len(lines) <= 3 and any("INFO serving %s" % s.socket in line for line in lines), lines
    assert s("torch daemon log --lines 1") == lines[-1]
    r = s.run("torch daemon log -x")
    assert r.code == 2 and "[bad_argument]" in r.err


def test_daemon_log_follow_prints_new_lines_until_ctrl_c(fresh_sh):
    s = fresh_sh()
    follower = subprocess.Popen(["bash", "-c", "torch daemon log -f -n 3"], env=s.env, stdout=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    seen = b""

    def heard(text):
        nonlocal seen
        if select.select([follower.stdout], [], [], 0.2)[0]:
            seen += os.read(follower.stdout.fileno(), 65536)
        return text in seen
    try:
        assert wait_until(lambda: heard(b"INFO serving")), seen  # tail runs: the last line is there
        s("torch daemon restart")  # a new line: "restarting"
        assert wait_until(lambda: heard(b"INFO restarting")), seen
        os.killpg(follower.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        assert follower.wait(timeout=15) == 130
    finally:
        if follower.poll() is None:
            os.killpg(follower.pid, signal.SIGKILL)
            follower.wait()
        follower.stdout.close()


def _epoch(s):
    r = s.run("torch daemon status --json")
    return json.loads(r.out)["epoch"] if r.code == 0 else None


@pytest.mark.slow
def test_the_log_is_rotated_past_its_size_limit(fresh_sh):
    s = fresh_sh(start=False)
    s.env["TORCHSH_LOG_MAX_BYTES"] = "600"  # the daemon inherits it from the client that starts it
    s("torch daemon start")
    log = os.path.join(s.folder, "torchd.log")
    for _ in range(3):  # each restart logs two lines of ~150 bytes: past 600 bytes at least once
        before = _epoch(s)
        s("torch daemon restart")
        assert wait_until(lambda: _epoch(s) not in (None, before))
    assert os.path.exists(log + ".1")
    assert os.path.getsize(log) <= 600 + 400 and os.path.getsize(log + ".1") <= 600 + 400
    assert oct(os.stat(log).st_mode & 0o777) == oct(0o600)
    shown = s("torch daemon log -n 3").splitlines()  # [] when a rotation just emptied the live log
    with open(log) as f:
        assert shown == f.read().splitlines()[-3:]  # the live log, not the rotated one
