"""How a `torch fit … --nproc_per_node 2` run (gloo, CPU, through real bash) ends: a failing rank ends it with
its rank and message and leaves the objects as they were; `torch job stop` and ^C end every rank and the
model keeps the steps all ranks took (equal to tests/support/ddp.py's simulated_ddp for that many steps); a
killed daemon ends its ranks and the run's folder with it.
"""
import json
import os
import re
import signal

import pytest
import torch
from safetensors.torch import load_file

from support.ddp import B, N, STOPPED, WORLD, X, assert_close, fit_processes, make, simulated_ddp
from support.waiting import wait_until

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)


def test_a_failing_rank_ends_the_run_with_its_rank_and_message_and_leaves_the_objects_as_they_were(sh):
    labels = torch.randint(0, 3, (N,), generator=torch.Generator().manual_seed(3))
    labels[2 * B + 1] = 7  # no shuffle: rank 1 takes the odd samples, this one in its second batch
    first, after = sh.tmp("first.safetensors"), sh.tmp("after.safetensors")
    r = sh.run("m=$(torch nn sequential 'linear 4 8' relu 'linear 8 3'); torch nn save $m %s; "
               "o=$(torch optim sgd $m --lr 0.1); L=$(torch data loader $(torch data tensors %s %s) --batch_size %d); "
               "torch fit $m $o $L --loss cross_entropy --epochs 3 --nproc_per_node 2; echo rc=$?; torch nn save $m %s"
               % (first, sh.put(X), sh.put(labels), B, after))
    assert r.code == 0, r.err
    assert "rc=4" in r.out.splitlines()  # PyTorch refused (torch_error), as in a one-process fit
    line, = [x for x in r.err.splitlines() if x.startswith("torch:")]
    assert line.startswith("torch: fit: rank 1: ") and "Target 7 is out of bounds" in line, r.err
    assert_close(load_file(after), load_file(first))
    assert wait_until(lambda: not fit_processes(sh), timeout=30)


def test_job_stop_ends_every_rank_and_the_model_keeps_the_steps_all_ranks_took(sh):
    text, first = make(sh)
    last = sh.tmp("last.safetensors")
    r = sh.run(text + "j=$(torch fit $m $o $L --loss mse_loss --sched $s --epochs 100000 --nproc_per_node 2 --detach); "
               "for i in $(seq 1200); do torch job list | grep -q \"$j .*batch\" && break; sleep 0.05; done; "
               "torch value $(torch add $(torch tensor '[1.5]') 1); torch job list | grep -c \"$j .*running\"; "
               "torch job stop $j; torch job wait $j; echo wait=$?; torch nn save $m %s" % last, timeout=180)
    assert r.code == 0, r.err
    assert r.out.splitlines()[:2] == ["[2.5]", "1"]  # tensor work is answered while the ranks train
    stop_line, = [x for x in r.out.splitlines() if x.startswith("stopped at")]
    epoch, step = map(int, STOPPED.fullmatch(stop_line).groups())
    assert step >= 1 and epoch == (step - 1) // (N // (WORLD * B)) + 1
    assert "wait=130" in r.out
    assert_close(load_file(last), simulated_ddp(load_file(first), steps=step)[0])
    assert wait_until(lambda: not fit_processes(sh), timeout=30)


def test_the_ranks_keep_freed_memory_as_the_daemon_does_and_end_with_a_killed_daemon(fresh_sh):
    s = fresh_sh()
    text, _ = make(s)
    r = s.run(text + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --nproc_per_node 2 --detach); "
              "for i in $(seq 1200); do torch job list | grep -q \"$j .*batch\" && break; sleep 0.05; done; "
              "torch daemon status --json", timeout=180)
    assert r.code == 0, r.err
    running = fit_processes(s)
    with open("/proc/%d/environ" % running[0], "rb") as f:
        folder = [v for v in f.read().split(b"\0") if v.startswith(b"TORCHSH_FIT_RUN=")][0].split(b"=", 1)[1]
    assert os.path.isdir(folder)
    for pid in running:  # glibc's thresholds the daemon sets by mallopt, passed down as its variables
        with open("/proc/%d/environ" % pid, "rb") as f:
            assert b"MALLOC_MMAP_THRESHOLD_=%d" % (32 << 20) in f.read().split(b"\0")
    os.kill(json.loads(r.out.splitlines()[-1])["pid"], signal.SIGKILL)
    assert wait_until(lambda: not fit_processes(s), timeout=30)
    assert wait_until(lambda: not os.path.exists(folder), timeout=10)  # the run's spec does not outlive it


def test_ctrl_c_stops_a_foreground_two_rank_fit_and_ends_every_rank(sh):
    from support.terminal import run_in_pty, screen_lines
    text, first = make(sh)
    last = sh.tmp("last.safetensors")
    out, code = run_in_pty(sh, text + "torch fit $m $o $L --loss mse_loss --sched $s --epochs 100000 --nproc_per_node 2; "
                           "echo rc=$?; torch nn save $m %s" % last,
                           send_when=lambda out: re.search(rb"(\x1b\[K|\n)2 +[\d.]+ ", out),  # epoch 2's row
                           timeout=180)
    lines = screen_lines(out)  # what the user sees: the live line cleared, the echoed ^C not counted
    assert code == 0
    at = [i for i, line in enumerate(lines) if line.startswith("torch: fit: stopped")]
    stopped = len(at) == 1 and re.fullmatch(r"torch: fit: stopped at epoch (\d+) step (\d+)", lines[at[0]])
    assert stopped and lines[at[0] + 1] == "rc=130", out[-800:]
    assert_close(load_file(last), simulated_ddp(load_file(first), steps=int(stopped.group(2)))[0])
    assert wait_until(lambda: not fit_processes(sh), timeout=30)
