"""ssh contexts: one persistent OpenSSH forwarder offers a remote daemon's socket as a local one.

A real sshd on 127.0.0.1 (tests/support/sshd.py) plays the remote host; its logins get their own runtime folder,
so the remote daemon is a different daemon than the session's. ssh.ensure_forwarder is called as the
client calls it; commands then run through real bash with `--socket` set to the forwarder's socket
(what `--context NAME` resolves to), and in-process PyTorch is the oracle.
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys

import pytest
import torch

from support.sshd import running_sshd, sshd_host  # noqa: F401
from support.waiting import process_gone, wait_until
from torchsh import paths, protocol
from torchsh.errors import TorchshError
from torchsh.client.contexts import ssh


def through(sh, local_sock):
    """A Shell like the session's `sh`, whose commands go through the forwarder's socket."""
    return type(sh)(local_sock, sh.folder)


def forwarder_pid(local_sock):
    with open(paths.sibling(local_sock, ".pid")) as f:
        return int(f.read())


def ssh_processes_for(local_sock):
    """Live processes whose argv forwards local_sock (the forwarders of this context)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.startswith(local_sock.encode() + b":") for a in argv) and not process_gone(int(entry)):
            found.append(int(entry))
    return found


def test_tensors_made_through_an_ssh_context_live_on_the_remote_daemon_and_equal_pytorch(sh, sshd_host):
    local = sshd_host.local_socket("calc")
    ssh.ensure_forwarder(sshd_host.context("calc"), local)
    remote = through(sh, local)
    status = json.loads(remote("torch daemon status --json"))
    assert status["socket"] == sshd_host.default_socket  # the remote's default socket, asked of the remote
    assert status["pid"] != json.loads(sh("torch daemon status --json"))["pid"]
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    ha, hb = remote.put(a), remote.put(b)
    hc = remote("torch matmul %s %s" % (ha, hb))
    hd = remote("torch relu %s" % hc)
    assert torch.equal(remote.fetch(hd), torch.relu(a @ b))
    assert ha in remote("torch tensors -q").split()  # held there, listed there
    assert sh.run("torch shape %s" % ha).code != 0  # and not in the session's own daemon


def test_bash_reaches_an_ssh_context_through_its_fast_door_with_no_client(sh, sshd_host):
    """Beside the forwarder's socket, its fast door's token file (NAME.fast, 0600): bash's commands, a stdin
    pipeline included, reach the remote daemon with no client on PATH; stop_forwarder ends the door too."""
    local = sshd_host.local_socket("door")
    ssh.ensure_forwarder(sshd_host.context("door"), local)
    fast = paths.sibling(local, ".fast")
    assert wait_until(lambda: os.path.exists(fast), 10)
    assert stat.S_IMODE(os.stat(fast).st_mode) == 0o600
    remote = through(sh, local)
    a = torch.randn(3)
    ha = remote.put(a)
    out = remote('eval "$(torch init bash)"; PATH=/nonexistent torch mul %s %s | PATH=/nonexistent torch value' % (ha, ha))
    assert torch.equal(torch.tensor(json.loads(out)), a * a)
    ssh.stop_forwarder(local)
    assert not os.path.exists(fast)


def test_commands_reuse_the_one_ssh_forwarder_without_new_logins(sh, sshd_host):
    local = sshd_host.local_socket("reuse")
    ctx = sshd_host.context("reuse")
    ssh.ensure_forwarder(ctx, local)
    pid, logins = forwarder_pid(local), sshd_host.logins()
    remote = through(sh, local)
    h = remote("torch ones 2 3")
    assert json.loads(remote("torch value %s --json" % remote("torch sum %s" % h))) == 6.0
    ssh.ensure_forwarder(ctx, local)  # the next command's check: it answers, nothing starts
    assert forwarder_pid(local) == pid
    assert ssh_processes_for(local) == [pid]
    assert sshd_host.logins() == logins  # no ssh connection per command


def test_a_killed_forwarder_is_restarted_and_the_remote_objects_are_still_there(sh, sshd_host):
    local = sshd_host.local_socket("restart")
    ctx = sshd_host.context("restart")
    ssh.ensure_forwarder(ctx, local)
    remote = through(sh, local)
    x = torch.arange(6.0).reshape(2, 3)
    h = remote.put(x)
    old = forwarder_pid(local)
    os.kill(old, signal.SIGKILL)
    assert wait_until(lambda: process_gone(old))
    assert remote.run("torch daemon status").code != 0  # its socket is stale: nobody forwards it
    ssh.ensure_forwarder(ctx, local)
    new = forwarder_pid(local)
    assert new != old and ssh_processes_for(local) == [new]
    assert torch.equal(remote.fetch(h), x)  # the same remote daemon, reached again


def test_the_remote_daemon_is_started_when_it_is_not_running(sh, sshd_host):
    remote_sock = sshd_host.remote_socket("started")
    assert sh.run("torch --socket %s daemon status" % remote_sock).code == protocol.EXIT_DAEMON  # none yet
    local = sshd_host.local_socket("started")
    ssh.ensure_forwarder(sshd_host.context("started", socket=remote_sock), local)
    assert json.loads(through(sh, local)("torch daemon status --json"))["socket"] == remote_sock
    assert sh.run("torch --socket %s daemon status" % remote_sock).code == 0


def test_when_the_remote_daemon_stops_its_forwarder_ends_and_the_next_command_starts_both(sh, sshd_host):
    remote_sock = sshd_host.remote_socket("ttl")
    ctx = sshd_host.context("ttl", socket=remote_sock)
    local = sshd_host.local_socket("ttl")
    ssh.ensure_forwarder(ctx, local)
    old = forwarder_pid(local)
    sh("torch --socket %s daemon stop" % remote_sock)  # as its idle TTL would
    assert wait_until(lambda: process_gone(old))  # not left accepting commands it can only drop
    assert through(sh, local).run("torch daemon status").code == protocol.EXIT_DAEMON  # nothing answers: the
    ssh.ensure_forwarder(ctx, local)  # client's cue to call this
    assert forwarder_pid(local) != old and ssh_processes_for(local) == [forwarder_pid(local)]
    assert json.loads(through(sh, local)("torch daemon status --json"))["socket"] == remote_sock


def test_a_remote_without_torchsh_fails_with_one_clear_error_and_starts_no_forwarder(sshd_host):
    local = sshd_host.local_socket("bare")
    ctx = sshd_host.context("bare", remote_torch=os.path.join(sshd_host.folder, "no-torchsh-here", "torch"))
    with pytest.raises(TorchshError) as e:
        ssh.ensure_forwarder(ctx, local)
    assert e.value.code == "remote_unavailable"
    assert "torchsh is not installed on 127.0.0.1 (" in e.value.message and "no-torchsh-here" in e.value.message
    assert "pip install torchsh on 127.0.0.1, " in e.value.hint
    assert "\n" not in e.value.line()
    assert not os.path.exists(local) and not os.path.exists(paths.sibling(local, ".pid"))


def test_an_unreachable_host_fails_with_what_ssh_said(sshd_host):
    closed = sshd_host.context("down", host="ssh://%s@127.0.0.1:1" % sshd_host.user)
    with pytest.raises(TorchshError) as e:
        ssh.ensure_forwarder(closed, sshd_host.local_socket("down"))
    assert e.value.code == "remote_unavailable"
    assert "cannot reach ssh://%s@127.0.0.1:1 over ssh: " % sshd_host.user in e.value.message
    assert "refused" in e.value.message.lower()


def test_a_file_planted_at_the_forwarder_socket_is_refused_and_left_alone(sshd_host):
    local = sshd_host.local_socket("planted")
    with open(local, "w") as f:
        f.write("not a socket")
    with pytest.raises(TorchshError) as e:
        ssh.ensure_forwarder(sshd_host.context("planted"), local)
    assert e.value.code == "untrusted" and "not a socket" in e.value.message
    with open(local) as f:
        assert f.read() == "not a socket"


def test_stop_forwarder_ends_the_ssh_process_and_removes_its_socket(sh, sshd_host):
    local = sshd_host.local_socket("stop")
    ssh.ensure_forwarder(sshd_host.context("stop"), local)
    pid = forwarder_pid(local)
    assert ssh.stop_forwarder(local) is True
    assert wait_until(lambda: process_gone(pid))
    assert not os.path.exists(local) and not os.path.exists(paths.sibling(local, ".pid"))
    assert ssh.stop_forwarder(local) is False


def test_two_first_commands_at_once_start_one_forwarder(sshd_host):
    local = sshd_host.local_socket("race")
    ctx = json.dumps(sshd_host.context("race"))
    code = "import json, sys; from torchsh.client.contexts import ssh; ssh.ensure_forwarder(json.loads(sys.argv[1]), sys.argv[2])"
    racers = [subprocess.Popen([sys.executable, "-c", code, ctx, local]) for _ in range(2)]
    assert [p.wait(timeout=300) for p in racers] == [0, 0]
    assert ssh_processes_for(local) == [forwarder_pid(local)]


def test_a_remote_torch_path_with_spaces_and_quotes_is_one_word_on_the_remote(sh, sshd_host):
    folder = os.path.join(sshd_host.folder, "it's a $HOME")
    os.makedirs(folder, exist_ok=True)
    odd = os.path.join(folder, "torch")
    shutil.copy(sshd_host.remote_torch, odd)
    local = sshd_host.local_socket("odd")
    ssh.ensure_forwarder(sshd_host.context("odd", remote_torch=odd), local)
    assert json.loads(through(sh, local)("torch daemon status --json"))["socket"] == sshd_host.default_socket


@pytest.mark.parametrize("host", ["ssh://-oProxyCommand=touch${IFS}/tmp/pwned", "tls://127.0.0.1:1", "ssh://",
                                  "ssh://h/path"])
def test_a_host_that_is_not_an_ssh_destination_is_refused_before_ssh_runs(sshd_host, host):
    with pytest.raises(TorchshError) as e:
        ssh.ensure_forwarder(sshd_host.context("bad", host=host), sshd_host.local_socket("bad"))
    assert e.value.code == "bad_argument" and "is not an ssh host" in e.value.message


def test_a_server_that_forbids_forwarding_sockets_fails_fast_with_the_sshd_setting_to_change(sshd_host):
    local = sshd_host.local_socket("strict")
    ctx = sshd_host.context("strict", host=sshd_host.no_forwarding_host, socket=sshd_host.remote_socket("strict"))
    with pytest.raises(TorchshError) as e:
        ssh.ensure_forwarder(ctx, local)
    assert e.value.code == "remote_unavailable"
    assert "does not forward to the daemon's socket %s (" % ctx["socket"] in e.value.message
    assert "open failed" in e.value.message  # what ssh said
    assert "AllowStreamLocalForwarding yes" in e.value.hint
    assert ssh_processes_for(local) == [] and not os.path.exists(local)  # the useless forwarder is gone


def test_the_harness_leaves_no_sshd_forwarder_or_remote_daemon_behind(sh, sshd_host):
    with running_sshd() as host:  # a second one, so that its end can be watched
        local = host.local_socket("left")
        ssh.ensure_forwarder(host.context("left"), local)
        remote_pid = json.loads(through(sh, local)("torch daemon status --json"))["pid"]
        pids = [host.sshd_pid, forwarder_pid(local), remote_pid]
        assert not any(process_gone(pid) for pid in pids)
    assert all(wait_until(lambda pid=pid: process_gone(pid)) for pid in pids)
    assert not os.path.exists(host.folder) and not os.path.exists(os.path.dirname(local))


def test_an_ssh_context_by_name_runs_commands_there_and_cp_brings_a_model_with_its_weights(sshd_host):
    """The whole user path: `context create --host ssh://…`, `--context NAME` on any command (handles say
    NAME), and `cp` from the local daemon to the remote one; the copy computes what the original does."""
    from support.remotes import bash, caller_env, private_folder, stop_all
    folder = private_folder("tsh-sshctx-")
    env = caller_env(folder)
    try:
        r = bash("torch context create g1 --host %s --remote-torch %s --ssh-config %s >/dev/null\n"
                 "a=$(torch --context g1 randn 3); echo $a; torch --context g1 tensors -q | grep -c ${a#tensor://g1/}\n"
                 "m=$(torch nn linear 2 1); x=$(torch ones 1 2); r=$(torch cp $m --to g1); echo $r\n"
                 "torch forward $m $x | torch value --json\n"
                 "torch --context g1 forward $r $(torch --context g1 ones 1 2) | torch --context g1 value --json\n"
                 "torch shape $a; echo shape=$?; torch context rm g1"
                 % (sshd_host.host, sshd_host.remote_torch, sshd_host.config), env)
        lines = r.out.splitlines()
        assert lines[0].startswith("tensor://g1/") and lines[1] == "1", (r.out, r.err)
        assert lines[2].startswith("nn://g1/")
        assert json.loads(lines[3]) == json.loads(lines[4])  # the copy's weights are the original's
        assert "shape=3" in lines and "[wrong_context]" in r.err and "torch --context g1 cp" in r.err, r.err
    finally:
        stop_all(folder)
        shutil.rmtree(folder, ignore_errors=True)
