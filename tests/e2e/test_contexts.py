"""Contexts (docs/remote.md): a second torchd listening on tls://127.0.0.1:PORT, reached through a context's
forwarder; results equal in-process PyTorch; the pin and the token are enforced; plain TCP is refused;
context ls/use/rm/inspect; --context > TORCHSH_CONTEXT > TORCHSH_SOCKET > `context use`; handles carry the
context's name and mixing two daemons' handles fails pointing to `torch cp`; a killed forwarder comes back.
The caller's files on a context: test_contexts_files.py."""
import json
import os
import re
import shutil
import signal
import stat
import subprocess

import pytest
import torch

from support.context_fixtures import ok, remote, user  # noqa: F401  (fixtures)
from support.remotes import bash, caller_env, free_port, private_folder
from support.required import require_tool
from support.waiting import process_gone, wait_until


def test_commands_through_a_tls_context_equal_pytorch(user, tmp_path):
    out = tmp_path / "y.pt"
    h = ok("a=$(torch --context r1 tensor '[[1.5,2],[3,-4]]'); b=$(torch --context r1 matmul $a $a); "
           "torch --context r1 save $b r1:%s; echo $b" % out, user)  # r1:/path: a file on r1's host (here too)
    assert re.fullmatch(r"tensor://r1/[0-9a-z]{8}", h)
    a = torch.tensor([[1.5, 2], [3, -4]])
    got = torch.load(out, weights_only=True)
    assert torch.equal(got, a @ a) and got.dtype == (a @ a).dtype


def test_handles_carry_the_context_name_in_the_census_and_the_json_api(user):
    h = ok("torch --context r1 zeros 2", user)
    assert h.startswith("tensor://r1/")
    census = json.loads(ok("torch --context r1 tensors --json", user))
    assert h in [row["handle"] for row in census]
    assert all(re.match(r"^[a-z]+://r1/[0-9a-z]{8}$", row["handle"]) for row in census), census  # every kind
    # the prefixed handle is accepted back, and so is the prefix-free form of this daemon's own handle
    assert ok("torch --context r1 value %s --json" % h, user) == "[0.0,0.0]"


def test_a_wrong_fingerprint_is_refused_before_anything_is_sent(remote, user):
    ok("torch context create bad --host %s --fingerprint SHA256:%s --token-file %s"
       % (remote.url, "A" * 43, remote.token_file), user)
    r = bash("torch --context bad zeros 2", user)
    assert r.code == 5 and r.out == ""
    assert r.err.count("\n") == 1 and r.err.rstrip().endswith("[fingerprint_mismatch]"), r.err
    assert remote.fingerprint in r.err  # it says what the daemon showed


def test_a_wrong_token_is_refused(remote, user, tmp_path):
    wrong = tmp_path / "token"
    wrong.write_text("0" * 64 + "\n")
    ok("torch context create bad --host %s --fingerprint %s --token-file %s" % (remote.url, remote.fingerprint, wrong),
       user)
    r = bash("torch --context bad zeros 2", user)
    assert r.code == 5 and r.out == ""
    assert r.err.count("\n") == 1 and r.err.rstrip().endswith("[token_refused]"), r.err
    with open(os.path.join(remote.dir, "torchd.log")) as f:
        assert "wrong token" in f.read()


@pytest.mark.parametrize("addr", ["127.0.0.1", "0.0.0.0"])
def test_torchd_refuses_plain_tcp_on_any_address(addr, tmp_path):
    folder = private_folder("ttcp-")
    try:
        r = bash("torchd --socket %s/d.sock --listen tcp://%s:%d" % (folder, addr, free_port()), caller_env(folder))
        assert r.code != 0 and "does not listen on plain TCP" in r.err
        assert not os.path.exists(os.path.join(folder, "d.sock"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_torchd_refuses_a_non_loopback_tls_address_without_a_token():
    folder = private_folder("ttok-")
    try:
        token = os.path.join(folder, "d.tls.token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT, 0o600)  # there, but empty: no token to check
        os.close(fd)
        port = free_port()
        r = bash("torchd --socket %s/d.sock --listen tls://0.0.0.0:%d --ttl 60s" % (folder, port), caller_env(folder))
        assert r.code == 1 and "without a token" in r.err and "non-loopback" in r.err, r.err
        assert not os.path.exists(os.path.join(folder, "d.sock"))
        with pytest.raises(OSError):
            import socket
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_context_ls_use_inspect_rm(remote, user):
    env = dict(user)
    del env["TORCHSH_SOCKET"]  # the current-context file decides only when no TORCHSH_SOCKET names a daemon
    ls = ok("torch context ls", env).splitlines()
    assert ls[1].split()[:2] == ["*", "default"] and ls[2].split() == ["r1", remote.url]
    assert ok("torch context use r1", env) == "r1"
    assert ok("torch context ls", env).splitlines()[2].split()[:2] == ["*", "r1"]
    assert ok("torch zeros 1", env).startswith("tensor://r1/")
    record = json.loads(ok("torch context inspect r1", env))
    assert record["host"] == remote.url and record["fingerprint"] == remote.fingerprint
    assert record["token"] == "(redacted)" and record["current"] is True
    with open(remote.token_file) as f:
        assert f.read().strip() not in ok("torch context inspect r1", env)
    local = record["local_socket"]
    assert record["forwarder_running"] and os.path.exists(local)
    assert ok("torch context rm r1", env) == "r1"
    assert not os.path.exists(local)
    assert ok("torch context ls --json", env) == json.dumps([{"name": "default", "host": "unix://%s/rt/torchsh/torchd.sock"
                                                               % remote.folder, "current": True}])
    r = bash("torch --context r1 zeros 1", env)
    assert r.code == 2 and r.err.rstrip().endswith("[unknown_context]")


def test_selection_order_flag_then_env_then_socket_then_current(user):
    env = dict(user)
    ok("torch context use r1", env)
    assert not ok("torch zeros 1", env).startswith("tensor://r1/")  # TORCHSH_SOCKET beats the current context
    del env["TORCHSH_SOCKET"]
    assert ok("torch zeros 1", env).startswith("tensor://r1/")
    env["TORCHSH_SOCKET"] = user["TORCHSH_SOCKET"]
    assert ok("TORCHSH_CONTEXT=r1 torch zeros 1", env).startswith("tensor://r1/")  # the variable beats the socket
    assert not ok("TORCHSH_CONTEXT=r1 torch --context default zeros 1", env).startswith("tensor://r1/")
    ok("torch context use default", env)


def test_daemon_status_names_the_context_and_its_tls_listener(remote, user):
    lines = ok("torch --context r1 daemon status", user).splitlines()
    assert lines[0].split() == ["context:", "r1"]
    assert lines[-1].split() == ["listen:", remote.url, "(certificate", remote.fingerprint + ")"]
    assert ok("torch daemon status", user).splitlines()[0].split() == ["context:", "default"]


def test_a_handle_of_another_context_fails_naming_both_and_pointing_to_cp(remote, user):
    ok("torch context create r2 --host %s --fingerprint %s --token-file %s"
       % (remote.url, remote.fingerprint, remote.token_file), user)
    local = ok("torch zeros 2", user)
    far = ok("torch --context r1 zeros 2", user)
    cases = [("torch --context r1 add %s %s" % (far, local), local, "default", "r1"),
             ("torch add %s %s" % (local, far), far, "r1", "default"),
             ("torch --context r2 neg %s" % far, far, "r1", "r2")]
    for script, handle, its, here in cases:
        r = bash(script, user)
        assert r.code == 3 and r.out == "", script
        assert r.err == ("torch: %s: %s belongs to context %s, but this command runs on context %s; copy it there: "
                         "torch --context %s cp %s --to %s [wrong_context]\n"
                         % (script.split()[-3 if "add" in script else -2], handle, its, here, its, handle, here)), r.err


def test_a_killed_forwarder_is_started_again(remote, user):
    h = ok("torch --context r1 ones 3", user)
    lock = os.path.join(remote.folder, "rt", "torchsh", "contexts", "r1.lock")
    pid = int(open(lock).read())
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: process_gone(pid), 10)
    assert ok("torch --context r1 value %s" % h, user) == "[1.0,1.0,1.0]"  # the daemon kept its objects
    assert int(open(lock).read()) != pid


def test_a_block_forms_command_runs_on_the_same_context(user):
    out = ok("torch --context r1 scope -- bash -c 'torch zeros 1'", user)
    assert out.startswith("tensor://r1/")


def test_the_fast_bash_path_reaches_the_selected_context(user):
    env = dict(user)
    out = ok('eval "$(torch init bash)"; torch zeros 1; TORCHSH_CONTEXT=r1 torch zeros 1; torch --context r1 zeros 1; '
             'unset TORCHSH_SOCKET; torch context use r1 >/dev/null; torch zeros 1; torch context use default >/dev/null', env)
    first, *rest = out.splitlines()
    assert not first.startswith("tensor://r1/") and all(h.startswith("tensor://r1/") for h in rest) and len(rest) == 3


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_context_command_in_a_shell_function_takes_its_forwarders_fast_door_with_no_client(shell, remote, user):
    """The function (bash's, zsh's) reaches the context through the fast door beside its forwarder's socket
    (NAME.fast, 0600): with no client on PATH, a command, a stdin pipeline and a block form still run on the
    context's daemon (the first command, with the client at hand, starts the forwarder and its door)."""
    script = ('eval "$(torch init %s)"; h=$(torch --context r1 tensor "[1.5,-2]")\n'
              'PATH=/nonexistent torch --context r1 mul $h $h | PATH=/nonexistent TORCHSH_CONTEXT=r1 torch value\n'
              "PATH=/nonexistent torch --context r1 scope -- /bin/bash -c 'exit 3'; echo \"block $?\"" % shell)
    out = (ok(script, user) if shell == "bash" else _zsh_ok(script, user)).splitlines()
    x = torch.tensor([1.5, -2])
    assert json.loads(out[0]) == (x * x).tolist() and out[1] == "block 3"
    fast = os.path.join(remote.folder, "rt", "torchsh", "contexts", "r1.fast")
    assert stat.S_IMODE(os.stat(fast).st_mode) == 0o600


def test_create_without_a_fingerprint_refuses_without_a_terminal(remote, user):
    r = bash("torch context create r3 --host %s --token-file %s" % (remote.url, remote.token_file), user)
    assert r.code == 2 and "--fingerprint" in r.err and r.err.rstrip().endswith("[missing_argument]")
    assert "r3" not in [c["name"] for c in json.loads(ok("torch context ls --json", user))]


def test_an_unreachable_context_daemon_is_one_line_naming_its_address(user):
    url = "tls://127.0.0.1:%d" % free_port()  # nobody listens there
    ok("torch context create gone --host %s --fingerprint SHA256:%s --token-file /dev/null" % (url, "A" * 43), user)
    try:
        r = bash("torch --context gone zeros 1", user)
        assert r.code == 5 and r.out == "" and r.err.count("\n") == 1
        assert url in r.err and r.err.rstrip().endswith("[daemon_unavailable]"), r.err
    finally:
        ok("torch context rm gone", user)


def test_a_context_store_others_can_write_is_refused(remote, user):
    store = os.path.join(remote.folder, "cfg", "torchsh", "contexts")
    os.chmod(store, 0o777)
    try:
        for script in ("torch context ls", "torch --context r1 zeros 1"):
            r = bash(script, user)
            assert r.code == 5 and r.err.rstrip().endswith("[untrusted]") and "other users" in r.err, (script, r.err)
    finally:
        os.chmod(store, 0o700)


def test_create_without_a_fingerprint_shows_it_and_pins_it_once_confirmed_on_a_terminal(remote, user):
    import pty
    pid, fd = pty.fork()
    if pid == 0:  # the child: `torch context create` on a terminal
        os.execvpe("torch", ["torch", "context", "create", "r4", "--host", remote.url, "--token-file",
                             remote.token_file], user)
    seen = b""
    while b"[y/N]" not in seen:
        seen += os.read(fd, 1024)
    os.write(fd, b"y\n")
    while True:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    assert os.waitpid(pid, 0)[1] == 0, seen
    assert remote.fingerprint.encode() in seen
    try:
        assert json.loads(ok("torch context inspect r4", user))["fingerprint"] == remote.fingerprint
        assert ok("torch --context r4 zeros 1", user).startswith("tensor://r4/")
    finally:
        ok("torch context rm r4", user)


def test_cp_moves_objects_between_the_default_daemon_and_a_tls_context(user, tmp_path):
    pytest.importorskip("torchsh.client.copyrelay")  # helper A's relay (issue 14: cp); this pins the client's side
    out = tmp_path / "back.pt"
    far = ok("a=$(torch tensor '[1.5,-2.5]'); torch cp $a --to r1", user)
    assert re.fullmatch(r"tensor://r1/[0-9a-z]{8}", far)
    back = ok("torch --context r1 cp %s --to default" % far, user)
    assert re.fullmatch(r"tensor://[0-9a-z]{8}", back)
    ok("torch save %s %s" % (back, out), user)
    assert torch.equal(torch.load(out, weights_only=True), torch.tensor([1.5, -2.5]))


def test_the_zsh_function_reaches_the_selected_context(user):
    out = _zsh_ok('eval "$(torch init zsh)"; torch zeros 1; TORCHSH_CONTEXT=r1 torch zeros 1; torch --context r1 zeros 1; '
                  'unset TORCHSH_SOCKET; torch context use r1 >/dev/null; torch zeros 1; torch context use default >/dev/null',
                  user)
    first, *rest = out.splitlines()
    assert not first.startswith("tensor://r1/") and len(rest) == 3 and all(h.startswith("tensor://r1/") for h in rest)


def _zsh_ok(script, env):
    """`ok` for zsh: the script's stdout, once it exited 0."""
    p = subprocess.run([require_tool("zsh"), "-f", "-c", script], env=env, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, "exit %d\n%s\n%s" % (p.returncode, script, p.stderr)
    return p.stdout.rstrip("\n")


def test_a_name_qualified_with_its_context_runs_there_and_fails_elsewhere_naming_both(user):
    """`@r1:w` is the name @w on context r1, as tensor://r1/ID is a handle of r1: given to r1 it is @w; given
    to another context it is wrong_context, pointing to `torch cp`, which takes it (and brings the name along)."""
    ok("torch --context r1 tensor '[1.0,2.0]' --name ctxname/w", user)
    assert ok("torch --context r1 value @r1:ctxname/w", user) == "[1.0,2.0]"
    assert ok("echo @r1:ctxname/w | torch --context r1 mul 2 | torch --context r1 value", user) == "[2.0,4.0]"
    assert ok("torch value @default:ctxname/w 2>&1 || echo $?", user).endswith("[unknown_name]\n3")
    r = bash("torch add @r1:ctxname/w 1", user)
    assert r.code == 3 and r.out == ""
    assert r.err == ("torch: add: @r1:ctxname/w belongs to context r1, but this command runs on context default; "
                     "copy it there: torch --context r1 cp @r1:ctxname/w --to default [wrong_context]\n"), r.err
    back = ok("torch --context r1 cp @r1:ctxname/w --to default", user)
    assert ok("torch value @ctxname/w", user) == "[1.0,2.0]"
    assert ok("torch names @ctxname/w -q", user) == "@ctxname/w" and back.startswith("tensor://")
    assert ok("torch --context r1 names @ctxname/w --json", user).count("tensor://r1/") == 1
    ok("torch --context r1 free @r1:ctxname/w; torch free @default:ctxname/w", user)
