"""The fast path's zsh function (docs/fast-path.md) gives the real client's output, errors, exit codes and
stdin lines, follows a job with `job wait` and prints a foreground fit's every epoch; `torch init nu` says
Nushell needs no fast path and what to run instead; `torch init` with no daemon prints the function and
starts nothing."""
import os
import subprocess

import torch

from support.pyclient import PYCLIENT
from support.required import require_tool


def _zsh(sh, script, stdin=None):
    zsh = require_tool("zsh")
    p = subprocess.run([zsh, "-f", "-c", 'eval "$(torch init zsh)"\n' + script], env=sh.env, cwd=sh.folder,
                       input=stdin, capture_output=True, stdin=None if stdin is not None else subprocess.DEVNULL,
                       timeout=120)
    return p.stdout, p.stderr, p.returncode


def test_zsh_function_gives_the_real_clients_output_errors_and_exit_codes(sh):
    a = sh.put(torch.tensor([[1.0, -2.5], [3.25, 4.0]]))
    assert _zsh(sh, "whence -w torch")[0] == b"torch: function\n"
    for cmd in ["torch value %s" % a, "torch add %s '[1'" % a, "torch nosuchop", "torch print %s" % a,
                "torch value %s --format npy" % a, "torch scope -- sh -c 'exit 7'"]:
        out, err, code = _zsh(sh, cmd)
        if "npy" in cmd:
            real_bytes = subprocess.run(["bash", "-c", "%s value %s --format npy" % (PYCLIENT, a)], env=sh.env,
                                        capture_output=True).stdout
            assert out == real_bytes and code == 0
            continue
        real = sh.run(cmd.replace("torch", PYCLIENT, 1))
        assert (out.decode(), err.decode(), code) == (real.out, real.err, real.code), cmd


def test_zsh_function_reads_stdin_lines_like_the_client(sh):
    a = sh.put(torch.tensor([1.0, 2.0]))
    out, err, code = _zsh(sh, "while read -r h; do torch add $h 1 | torch value; done", stdin=("%s\n\n %s \n" % (a, a)).encode())
    assert (out, err, code) == (b"[2.0,3.0]\n[2.0,3.0]\n", b"", 0)


def test_init_nu_says_nushell_needs_no_fast_path_and_what_to_run_instead(sh):
    r = sh.run("command torch init nu")
    assert r.code == 2 and r.out == ""
    assert "[bad_argument]" in r.err and "torch nu-module --install" in r.err


def test_init_with_no_daemon_prints_the_function_and_starts_nothing(fresh_sh):
    s = fresh_sh(start=False)
    for shell in ("bash", "zsh"):
        out = s("command torch init %s" % shell)
        assert "\ntorch() {" in out and "__torchsh_rpc" in out
    assert not os.path.exists(s.socket)  # a .bashrc's eval must not cost a daemon start


ZSH_FIT = ("m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
           "L=$(torch data loader $(torch data tensors $(torch randn 64 2) $(torch randn 64 1)) --batch_size 16); ")


def test_zsh_job_wait_follows_the_job_to_its_end_like_the_client(sh):
    out, err, code = _zsh(sh, ZSH_FIT + "j=$(torch fit $m $o $L --loss mse_loss --epochs 3 --detach); torch job wait $j; echo rc=$?")
    lines = out.decode().splitlines()
    assert b"job poll" not in out + err
    assert lines[0].split()[:2] == ["epoch", "loss"] and [l.split()[0] for l in lines[1:4]] == ["1", "2", "3"]
    assert lines[4] == "rc=0" and code == 0


def test_zsh_foreground_fit_prints_every_epoch_and_exits_0(sh):
    out, err, code = _zsh(sh, ZSH_FIT + "torch fit $m $o $L --loss mse_loss --epochs 3; echo rc=$?")
    lines = out.decode().splitlines()
    assert b"job poll" not in out + err
    assert [l.split()[0] for l in lines[1:4]] == ["1", "2", "3"] and lines[4] == "rc=0"
