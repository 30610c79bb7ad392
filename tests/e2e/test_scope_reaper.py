"""Scopes of a killed client: the daemon ends `torch scope -- CMD`'s scope once its client process is gone.

The client waits for CMD and then ends the scope itself; SIGTERM (and SIGHUP, timeout(1)) is passed
on to CMD first, so CMD is not orphaned. SIGKILL cannot be caught: then the daemon's reaper, which
knows the client's pid from SO_PEERCRED, ends the scope within a couple of seconds.
"""
import json
import os
import signal
import subprocess
import time

import pytest

from support.waiting import process_gone, wait_until

BASH_SCOPE = 'x=$(torch ones "[2]"); echo "$$ $x" > {ready}.tmp; mv {ready}.tmp {ready}; sleep 30'


def status(s):
    return json.loads(s("torch daemon status --json"))


def count(s):
    return sum(status(s)["objects"].values())


def start_scope_client(s, tmp_path):
    """`torch scope -- bash -c …` in a session of its own; returns (client, bash pid, handle made inside)."""
    ready = tmp_path / "ready"
    client = subprocess.Popen(["torch", "scope", "--", "bash", "-c", BASH_SCOPE.format(ready=ready)],
                              env=s.env, cwd=s.folder, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=_default_signals)
    assert wait_until(ready.exists, 60), "the scope's command never started"
    bash_pid, handle = ready.read_text().split()
    return client, int(bash_pid), handle


def _default_signals():
    """The client as a terminal's shell starts it: a suite run under nohup, or as a background job, passes
    SIGHUP (and SIGINT) on ignored, and the client rightly keeps an inherited ignore (client/blocks.py: _spawn_and_wait)."""
    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


@pytest.fixture
def daemon(fresh_sh):
    s = fresh_sh()
    groups = []
    yield s, groups
    for pgid in groups:  # only the sessions this test started: the client, its bash and sleep
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_the_scope_of_a_killed_client_is_ended_and_its_objects_freed(daemon, tmp_path, sig):
    s, groups = daemon
    before = count(s)
    client, bash_pid, handle = start_scope_client(s, tmp_path)
    groups.append(client.pid)
    assert count(s) == before + 1 and status(s)["scopes"], status(s)
    client.send_signal(sig)
    client.wait(timeout=30)
    assert wait_until(lambda: count(s) == before and not status(s)["scopes"]), status(s)
    r = s.run("torch value %s" % handle)
    assert r.code == 3 and "[unknown_handle]" in r.err
    if sig != signal.SIGKILL:  # passed on: CMD is gone too, and the client exits as CMD did
        assert wait_until(lambda: process_gone(bash_pid), 10)
        assert client.returncode == 128 + sig
    assert s("torch ones '[1]' | torch value") == "[1.0]"


def test_a_timeout_of_the_client_ends_cmd_and_the_scope(daemon, tmp_path):
    s, groups = daemon
    before = count(s)
    p = subprocess.Popen(["timeout", "3", "torch", "scope", "--", "bash", "-c",
                          'x=$(torch ones "[2]"); echo $$ > %s; sleep 30' % (tmp_path / "pid")],
                         env=s.env, cwd=s.folder, stdin=subprocess.DEVNULL, start_new_session=True)
    groups.append(p.pid)
    assert p.wait(timeout=60) == 124
    assert wait_until(lambda: count(s) == before and not status(s)["scopes"]), status(s)
    assert wait_until(lambda: process_gone(int((tmp_path / "pid").read_text())), 10)


def test_a_live_client_keeps_its_scope(daemon, tmp_path):
    s, groups = daemon
    before = count(s)
    client, _, handle = start_scope_client(s, tmp_path)
    groups.append(client.pid)
    time.sleep(2.5)  # more than two rounds of the reaper
    assert count(s) == before + 1 and s.run("torch value %s" % handle).code == 0


LATER_BLOCK = ('x=$(torch ones "[2]"); echo $x > {d}/ready.tmp; mv {d}/ready.tmp {d}/ready; sleep 2; '
               'torch ones "[3]" > {d}/later.out 2> {d}/later.err; echo $? > {d}/later.tmp; mv {d}/later.tmp {d}/later; '
               'sleep 30')


@pytest.mark.parametrize("caller", ["client", "bash", "zsh"])
def test_a_killed_scope_clients_block_is_refused_naming_the_ended_scope(daemon, tmp_path, caller):
    """kill -9 of the process that runs `torch scope -- CMD` (the client, or the shell whose function runs it:
    no pid is known on the fast path) drops the connection it held: the scope ends, and CMD's later commands
    get one line naming the ended scope instead of objects made in the global registry."""
    s, groups = daemon
    script = tmp_path / "block.sh"
    script.write_text(LATER_BLOCK.format(d=tmp_path))
    before = count(s)
    line = "torch scope -- bash %s" % script
    argv = {"client": ["torch", "scope", "--", "bash", str(script)],
            "bash": ["bash", "-c", 'eval "$(torch init bash)"; %s' % line],
            "zsh": ["zsh", "-f", "-c", 'eval "$(torch init zsh)"; %s' % line]}[caller]
    p = subprocess.Popen(argv, env=s.env, cwd=s.folder, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=_default_signals)
    groups.append(p.pid)
    assert wait_until((tmp_path / "ready").exists, 60), "the scope's command never started"
    made = (tmp_path / "ready").read_text().strip()
    p.kill()  # SIGKILL: the caller alone; CMD runs on
    p.wait(timeout=30)
    assert wait_until((tmp_path / "later").exists, 60), "CMD's later command never ran"
    err = (tmp_path / "later.err").read_text()
    assert (tmp_path / "later").read_text().strip() == "3" and (tmp_path / "later.out").read_text() == ""
    assert "[scope_ended]" in err and "went away" in err and "scope-" in err, err
    assert count(s) == before and s.run("torch value %s" % made).code == 3
