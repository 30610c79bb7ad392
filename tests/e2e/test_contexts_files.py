"""The caller's files on a TLS context (docs/remote.md): files stream to and from the remote daemon through
the client (load, save, session save/load, fit --log and its resume, a Ctrl-C'd fit's log folder), written
back with the caller's umask or their kept mode; what the client cannot stream is one line; staged copies go
when the command ends; the relay imports only builtins and the client's wire."""
import json
import os
import signal
import stat
import subprocess

import numpy as np
import torch
from safetensors.torch import load_file

from support.context_fixtures import ok, remote, user  # noqa: F401  (fixtures)
from support.imports import extra_imports
from support.remotes import bash
from support.waiting import wait_until


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
