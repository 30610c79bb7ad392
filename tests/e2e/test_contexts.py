"""Contexts (docs/remote.md): a second torchd listening on tls://127.0.0.1:PORT, reached through a context's
forwarder; results equal in-process PyTorch; the pin and the token are enforced; plain TCP is refused;
context ls/use/rm/inspect; --context > TORCHSH_CONTEXT > TORCHSH_SOCKET > `context use`; handles carry the
context's name and mixing two daemons' handles fails pointing to `torch cp`; a killed forwarder comes back."""
import json
import os
import re
import shutil
import signal
import stat
import subprocess

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from support.imports import extra_imports
from support.remotes import bash, caller_env, free_port, private_folder, running
from support.required import require_tool
from support.waiting import process_gone, wait_until


@pytest.fixture(scope="module")
def remote():
    with running("tctx-") as daemon:
        yield daemon


@pytest.fixture
def user(remote, sh):
    """A caller whose default daemon is the session's (TORCHSH_SOCKET) and who has context r1 (the TLS daemon)."""
    env = caller_env(remote.folder, TORCHSH_SOCKET=sh.socket)
    r = bash("for c in r1 r2 bad; do torch context rm $c; done 2>/dev/null >&2; torch context use default >/dev/null; "
             "torch context create r1 --host %s --fingerprint %s --token-file %s"
             % (remote.url, remote.fingerprint, remote.token_file), env)
    assert r.code == 0 and r.out == "r1\n", r.err
    return env


def ok(script, env, **kw):
    r = bash(script, env, **kw)
    assert r.code == 0, "exit %d\n%s\n%s" % (r.code, script, r.err)
    return r.out.rstrip("\n")


def test_commands_through_a_tls_context_equal_pytorch(user, tmp_path):
    out = tmp_path / "y.pt"
    h = ok("a=$(torch --context r1 tensor '[[1.5,2],[3,-4]]'); b=$(torch --context r1 matmul $a $a); "
           "torch --context r1 save $b r1:%s; echo $b" % out, user)  # r1:/path: a file on r1's host (here too)
    assert re.fullmatch(r"tensor://r1/[0-9a-z]{8}", h)
    a = torch.tensor([[1.5, 2], [3, -4]])
    got = torch.load(out, weights_only=True)
    assert torch.equal(got, a @ a) and got.dtype == (a @ a).dtype


def test_the_callers_files_stream_to_and_from_a_remote_context(user, tmp_path, remote):
    """A path in a command on a remote context is the caller's file (Docker's lesson: never resolved silently
    on the daemon's host): `load` and `data open` read it through the client, `save`, `nn save` and
    `checkpoint save` write it back here (atomically); NAME:/path names a file on the daemon's host."""
    x = torch.randn(5, 3)
    torch.save({"x": x}, tmp_path / "in.pt")
    np.save(tmp_path / "feat.npy", x.numpy())
    r = bash("cd %s && t=$(torch --context r1 load in.pt) && torch --context r1 save $t out.safetensors && "
             "d=$(torch --context r1 data open feat.npy) && torch --context r1 data info $d --json && "
             "m=$(torch --context r1 nn linear 3 2) && torch --context r1 nn save $m model.safetensors && "
             "torch --context r1 checkpoint save ck.safetensors $m && "
             "torch --context r1 save $t r1:%s/host.pt && ls" % (tmp_path, remote.dir), user)
    assert r.code == 0, r.err
    assert torch.equal(load_file(tmp_path / "out.safetensors")["0"], x)
    assert json.loads(r.out.splitlines()[0])["length"] == 5
    assert set(load_file(tmp_path / "model.safetensors")) == {"weight", "bias"}
    assert {"model.weight", "model.bias"} <= set(load_file(tmp_path / "ck.safetensors"))
    assert os.path.exists(os.path.join(remote.dir, "host.pt")) and not (tmp_path / "host.pt").exists()
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".torchsh-part")]


def test_a_file_written_back_from_a_remote_context_has_the_callers_umask_or_keeps_its_mode(user, tmp_path):
    (tmp_path / "kept.safetensors").write_bytes(b"")
    os.chmod(tmp_path / "kept.safetensors", 0o604)
    r = bash("cd %s && umask 027 && t=$(torch --context r1 randn 2) && torch --context r1 save $t new.safetensors && "
             "torch --context r1 save $t kept.safetensors" % tmp_path, user)
    assert r.code == 0, r.err
    assert stat.S_IMODE(os.stat(tmp_path / "new.safetensors").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "kept.safetensors").st_mode) == 0o604


def test_a_folder_the_client_cannot_stream_or_a_missing_file_on_a_remote_context_is_one_line(user, tmp_path):
    """Folders stream through the `torch` client; the JSON API cannot stream (a plain path is refused by name),
    nor can a detached fit bring its --log folder back; a link inside a folder is refused by name, never
    followed; a missing folder or file is one line."""
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "link").symlink_to("/etc/passwd")
    api = ("curl -s --unix-socket \"$(python -c 'from torchsh import paths; print(paths.context_socket(\"r1\"))')\" "
           "-H 'Torchsh-Context: r1' -d '{\"args\": [\"here\"], \"env\": {\"TORCHSH_CONTEXT\": \"r1\"}, \"cwd\": \"%s\"}' "
           "http://torchd/v1/ops/session.save; echo" % tmp_path)
    fit = ("m=$(torch --context r1 nn linear 2 1); o=$(torch --context r1 optim sgd $m --lr 0.1); "
           "L=$(torch --context r1 data loader $(torch --context r1 data tensors $(torch --context r1 randn 4 2) "
           "$(torch --context r1 randn 4 1))); torch --context r1 fit $m $o $L --loss mse_loss --log run --detach; echo detach=$?")
    r = bash("cd %s; t=$(torch --context r1 ones 2); %s; %s; torch --context r1 session load saved; echo link=$?; "
             "torch --context r1 session load nothing; echo nodir=$?; torch --context r1 load nothing.pt; echo load=$?; "
             "torch --context r1 save $t r1:relative.pt; echo rel=$?" % (tmp_path, api, fit), user)
    out = r.out.split("\n")
    assert json.loads(out[0])["error"]["code"] == "remote_path" and "r1:/absolute/path" in out[0], r.out
    assert out[1:-1] == ["detach=2", "link=2", "nodir=6", "load=6", "rel=2"], (r.out, r.err)
    lines = r.err.splitlines()
    assert len(lines) == 5, r.err
    assert lines[0].endswith("[remote_path]") and "--log %s/run" % tmp_path in lines[0] and "without --detach" in lines[0]
    assert lines[1].endswith("[remote_path]") and "%s/saved/link is a symlink" % tmp_path in lines[1]
    assert "cannot read" in lines[2] and lines[2].endswith("[file_error]")
    assert "cannot read" in lines[3] and lines[3].endswith("[file_error]")
    assert lines[4].endswith("[remote_path]")
    assert not (tmp_path / "here").exists() and not (tmp_path / "run").exists()


def test_session_save_and_load_on_a_remote_context_use_the_callers_folder(user, tmp_path, remote):
    """`session save DIR` writes DIR here (what else DIR held stays); `session load DIR` sends it to a fresh
    daemon of the context, which holds the same values under the same handles."""
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "notes.txt").write_text("mine")
    # only this test's objects (a dataset of another test maps a staged copy that goes with the daemon)
    a, said = ok("cd %s && torch --context r1 free --all && a=$(torch --context r1 tensor '[[1.5,2],[3,-4]]') && "
                 "said=$(torch --context r1 session save saved) && echo $a && echo $said" % tmp_path, user).split("\n")
    assert said == "saved 1 objects to %s/saved" % tmp_path  # where it is for the caller
    assert (tmp_path / "saved" / "session.safetensors").is_file() and (tmp_path / "saved" / "notes.txt").read_text() == "mine"
    assert not [n for n in os.listdir(tmp_path / "saved") if n.endswith(".torchsh-part")]
    remote.stop()  # a fresh daemon of the context: nothing held, the same certificate and token
    remote.start()
    # the restored handle, of the old daemon's epoch, is this context's (as printed, kind://r1/ID)
    out = ok("cd %s && torch --context r1 session load saved && torch --context r1 value %s" % (tmp_path, a), user)
    restored, value = out.split("\n")
    assert restored.startswith("restored 1 objects")
    assert value == "[[1.5,2.0],[3.0,-4.0]]"


def test_fit_log_on_a_remote_context_is_the_callers_folder_and_resumes_from_it(user, tmp_path):
    """`fit --log DIR` leaves DIR here with the run's files; `--resume auto` sends DIR back, goes on from its
    last checkpoint, and only what the run rewrote comes back (a file of the caller's there stays)."""
    setup = ("cd %s && m=$(torch --context r1 nn linear 2 1) && o=$(torch --context r1 optim sgd $m --lr 0.1) && "
             "L=$(torch --context r1 data loader $(torch --context r1 data tensors $(torch --context r1 randn 16 2) "
             "$(torch --context r1 randn 16 1)) --batch_size 8) && " % tmp_path)
    ok(setup + "torch --context r1 fit $m $o $L --loss mse_loss --epochs 1 --log run >/dev/null && echo mine > run/mine.txt && "
       "torch --context r1 fit $m $o $L --loss mse_loss --epochs 2 --log run --resume auto --json > rows", user)
    run = tmp_path / "run"
    assert {"metrics.jsonl", "metrics.csv", "run.json", "last.safetensors", "mine.txt"} <= set(os.listdir(run))
    epochs = [json.loads(line)["epoch"] for line in (tmp_path / "rows").read_text().splitlines()]
    assert len(epochs) == 1  # the resumed run trained only the epoch the first one left
    logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert sorted(r["epoch"] for r in logged if r["kind"] == "epoch") == sorted({epochs[0] - 1, epochs[0]})
    assert json.loads((run / "run.json").read_text())["resumed"] and (run / "mine.txt").read_text() == "mine\n"
    assert "model.weight" in load_file(run / "last.safetensors")


def test_a_remote_fit_stopped_with_ctrl_c_brings_its_log_folder_back(user, tmp_path):
    """Ctrl-C stops a foreground fit at a step boundary; its --log folder (the checkpoint `--resume auto`
    goes on from) comes back here."""
    m, o, L = ok("m=$(torch --context r1 nn linear 2 1) && o=$(torch --context r1 optim sgd $m --lr 0.01) && "
                 "L=$(torch --context r1 data loader $(torch --context r1 data tensors $(torch --context r1 randn 2048 2) "
                 "$(torch --context r1 randn 2048 1))) && echo $m $o $L", user).split()
    with open(tmp_path / "err", "w") as err:
        p = subprocess.Popen(["torch", "--context", "r1", "fit", m, o, L, "--epochs", "100000", "--log", "run"],
                             env=user, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        wait_until(lambda: "batch 2048/2048" in (tmp_path / "err").read_text() or p.poll() is not None, timeout=120)
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=120) == 130
    assert "stopped at epoch" in (tmp_path / "err").read_text()
    assert {"metrics.jsonl", "last.safetensors", "run.json"} <= set(os.listdir(tmp_path / "run"))
    assert "model.weight" in load_file(tmp_path / "run" / "last.safetensors")


def test_filerelay_imports_only_builtins_and_the_client_wire():
    extra = extra_imports("torchsh.client.filerelay")
    assert extra <= {"torchsh", "torchsh.client", "torchsh.client.filerelay", "torchsh.client.http", "torchsh.protocol",
                     "torchsh.paths", "torchsh.trust", "torchsh.client.wire", "_socket"}, extra


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
    zsh = require_tool("zsh")
    script = ('eval "$(torch init zsh)"; torch zeros 1; TORCHSH_CONTEXT=r1 torch zeros 1; torch --context r1 zeros 1; '
              'unset TORCHSH_SOCKET; torch context use r1 >/dev/null; torch zeros 1; torch context use default >/dev/null')
    p = subprocess.run([zsh, "-f", "-c", script], env=user, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    first, *rest = p.stdout.splitlines()
    assert not first.startswith("tensor://r1/") and len(rest) == 3 and all(h.startswith("tensor://r1/") for h in rest)


def test_several_files_in_one_command_and_staged_copies_go_when_it_ends(user, tmp_path, remote):
    """data open of two files asks for them one round each; a plain `load`'s staged copy is removed once
    read, a dataset's stays (it maps the file) while the daemon runs."""
    x, y = torch.randn(6, 2), torch.arange(6)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "y.npy", y.numpy())
    def staged():  # every staged file of every daemon here (the TLS daemon stages in /tmp)
        return {os.path.join(root, n) for f in os.listdir("/tmp") if f.startswith("torchd-staged-")
                for root, _, names in os.walk(os.path.join("/tmp", f)) for n in names}
    before = staged()
    r = bash("cd %s && d=$(torch --context r1 data open x.npy y.npy) && torch --context r1 data head $d --n 6 && "
             "for i in 1 2 3; do torch --context r1 load x.npy >/dev/null; done" % tmp_path, user)
    assert r.code == 0, r.err
    items = [json.loads(line) for line in r.out.splitlines()]
    assert torch.equal(torch.tensor([i[0] for i in items]), x) and [i[1] for i in items] == y.tolist()
    assert sorted(os.path.basename(p) for p in staged() - before) == ["x.npy", "y.npy"]  # the dataset's; no load's
    stage_dirs = lambda: {os.path.join(f, d) for f in os.listdir("/tmp") if f.startswith("torchd-staged-")
                          for d in os.listdir(os.path.join("/tmp", f))}
    held = stage_dirs()
    failed = bash("cd %s && torch --context r1 save $(torch --context r1 ones 2) out.xyz" % tmp_path, user)
    assert failed.code == 2 and "unknown file type" in failed.err and not (tmp_path / "out.xyz").exists()
    assert stage_dirs() == held  # the failed save's staged output went with it


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
