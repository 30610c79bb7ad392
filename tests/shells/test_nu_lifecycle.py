"""Nushell: the daemon's lifecycle is synchronous, and the census and status never start a daemon
(issue 11, section 2), as in bash: torch.nu runs `^torch daemon stop|start|restart`, which wait."""
import json
import os
import subprocess

import pytest

from nutools import Nu


def _daemons(folder):
    p = subprocess.run(["pgrep", "-f", "torchsh.daemon --socket %s/" % folder], capture_output=True, text=True)
    return p.stdout.split()


def test_nu_census_and_status_start_no_daemon(fresh_sh):
    s = fresh_sh(start=False)
    out = Nu(s)("print (torch tensors | length); try { torch daemon status } catch {|e| print $e.msg }")
    assert out.split("\n") == ["0", "torch daemon status: no daemon is running on %s" % s.socket]
    assert not os.path.exists(s.socket) and not _daemons(s.folder)


@pytest.mark.slow
def test_nu_restart_and_stop_return_once_done(fresh_sh):
    s = fresh_sh()
    nu = Nu(s)
    old = json.loads(s("torch daemon status --json"))["pid"]
    out = nu("torch daemon restart | print; print (torch ones [1])")
    assert "restarting (pid %d)" % old in out and out.split("\n")[-1].startswith("tensor://")
    assert json.loads(s("torch daemon status --json"))["pid"] != old
    nu("torch daemon stop")
    assert not os.path.exists(s.socket) and not _daemons(s.folder)
    assert nu("torch daemon stop").startswith("no torchd is running")


def test_nu_refuses_a_socket_path_over_the_unix_limit_before_starting_a_daemon(fresh_sh):
    s = fresh_sh(start=False)
    deep = os.path.join(s.folder, "d" * (108 - len(s.folder) - len("/torchd.sock") - 1))  # Linux's sun_path
    os.mkdir(deep, 0o700)
    sock = os.path.join(deep, "torchd.sock")
    out = Nu(s)("try { torch ones [2] } catch {|e| print $e.msg; print $e.details.code }",
                env={"TORCHSH_SOCKET": sock})
    msg, code = out.split("\n")
    assert msg.startswith("torch: socket path %s is 108 bytes" % sock) and "sun_path" in msg, msg
    assert code == "torchsh::too_large"
    assert os.listdir(deep) == [] and not _daemons(s.folder)
