"""Owned scopes in-process: a scope whose client process is gone (or whose pid was reused) is reaped."""
import os
import subprocess

from torchsh.registry.owners import process_identity
from torchsh.registry.store import Registry


def _finished_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_scope_whose_owner_exited_is_reaped_and_a_live_owner_keeps_its_scope():
    r = Registry()
    live = r.begin_scope(owner_pid=os.getpid())
    dead = r.begin_scope(owner_pid=_finished_pid())
    unowned = r.begin_scope()
    h_live, h_dead = r.put("a", scope=live), r.put("b", scope=dead)
    assert r.reap_orphans() == {dead: 1}
    assert set(r.open_scopes()) == {live, unowned}
    assert h_live in dict(r.items()) and h_dead not in dict(r.items())


def test_a_reused_pid_does_not_keep_a_dead_clients_scope():
    r = Registry()
    s = r.begin_scope(owner_pid=os.getpid())
    pid, start = r._scopes[s].owner
    r._scopes[s].owner = (pid, start - 1)  # the same pid, started at another time: another process
    assert r.reap_orphans() == {s: 0}


def test_a_zombie_owner_counts_as_gone():
    p = subprocess.Popen(["true"])
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: a zombie
    try:
        assert process_identity(p.pid) is None
    finally:
        p.wait()


def test_objects_made_in_a_reaped_scope_go_to_the_global_registry():
    r = Registry()
    s = r.begin_scope(owner_pid=_finished_pid())
    r.reap_orphans()
    h = r.put("late", scope=s)  # CMD outlived its client and still runs torch commands
    assert r.get(h) == "late" and dict(r.items())[h].scope is None
