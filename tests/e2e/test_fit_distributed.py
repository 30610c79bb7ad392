"""`torch fit … --nproc_per_node 2` on torch.distributed (gloo, CPU) through real bash.

What the equality tests compare: with DDP each of the 2 ranks takes its DistributedSampler share of the
data (shuffled with the loader's seed + the epoch, set_epoch every epoch) in batches of the loader's
batch size B, and DDP averages the ranks' gradients. Each rank's loss is a mean over B samples, so the
averaged gradient is the gradient of the mean over the union of both ranks' batches: one optimizer step
of a single process over those 2B samples. `simulated_ddp` (tests/support/ddp.py) replays exactly that in this process, with
PyTorch's own DistributedSampler giving the shares; without shuffling the union of batch k is samples
2Bk..2B(k+1)-1, which is the one-process `torch fit` over batches of 2B. Within 1e-6 (the two ranks'
gradients are summed in another order than one process sums them).
How a run ends (a failing rank, job stop, ^C, a killed daemon): test_fit_distributed_ends.py; where its
sockets listen: test_fit_distributed_network.py.
"""
import json
import os
import socket

import pytest
import torch
from safetensors.torch import load_file

from support.ddp import B, LR, TOL, X, Y, assert_close, checkpoint_of, make, simulated_ddp

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_gloo_ranks_equal_ddp_replayed_in_one_process_and_the_same_handles_hold_the_result(sh, strategy):
    text, first = make(sh)
    ck = sh.tmp("ck.safetensors")
    out = sh(text + "before=\"$m $o $s\"; torch fit $m $o $L --loss mse_loss --sched $s --epochs 2 --nproc_per_node 2 --strategy %s "
             "--json; torch checkpoint save %s $m $o $s; [ \"$before\" = \"$m $o $s\" ] && torch tensors | "
             "grep -c -e \"^$m \" -e \"^$o \" -e \"^$s \"" % (strategy, ck))
    *rows, held = out.splitlines()
    assert held == "3"  # the three handles still name the objects, which hold the trained state
    want_weights, want_opt, want_losses = simulated_ddp(load_file(first), epochs=2)
    weights, opt = checkpoint_of(ck)
    assert_close(weights, want_weights)
    for i, state in want_opt["state"].items():
        assert torch.allclose(opt["state"][i]["momentum_buffer"], state["momentum_buffer"], rtol=0, atol=TOL)
    assert opt["param_groups"][0]["lr"] == pytest.approx(LR * 0.25)  # StepLR stepped once per epoch, twice
    rows = [json.loads(r) for r in rows]
    assert [r["epoch"] for r in rows] == [1, 2]
    assert [r["loss"] for r in rows] == pytest.approx(want_losses, abs=TOL)  # both ranks' samples counted


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_accumulating_two_batches_per_step_equals_ddp_over_twice_the_batch(sh, strategy):
    """The ranks exchange gradients only in a window's last backward (no_sync before): the same result."""
    text, first = make(sh)
    saved = sh.tmp("accum.safetensors")
    rows = sh(text + "torch fit $m $o $L --loss mse_loss --sched $s --epochs 1 --accum 2 --nproc_per_node 2 --strategy %s --json; "
              "torch nn save $m %s" % (strategy, saved))
    want_weights, _, want_losses = simulated_ddp(load_file(first), epochs=1, batch=2 * B)
    assert_close(load_file(saved), want_weights)
    assert json.loads(rows)["loss"] == pytest.approx(want_losses[0], abs=TOL)


def test_two_ranks_without_shuffle_equal_the_one_process_fit_with_twice_the_batch(sh):
    text, first = make(sh, shuffle=False)
    dist_ck, one_ck = sh.tmp("dist.safetensors"), sh.tmp("one.safetensors")
    sh(text + "torch fit $m $o $L --loss mse_loss --sched $s --epochs 2 --nproc_per_node 2 >/dev/null; "
       "torch checkpoint save %s $m $o $s; "
       "m1=$(torch nn sequential 'linear 4 8' relu 'linear 8 1'); torch nn load $m1 %s; "
       "o1=$(torch optim sgd $m1 --lr %s --momentum 0.9); s1=$(torch sched step_lr $o1 --step_size 1 --gamma 0.5); "
       "L1=$(torch data loader $(torch data tensors %s %s) --batch_size %d); "
       "torch fit $m1 $o1 $L1 --loss mse_loss --sched $s1 --epochs 2 >/dev/null; torch checkpoint save %s $m1 $o1 $s1"
       % (dist_ck, first, LR, sh.put(X), sh.put(Y), 2 * B, one_ck))
    dist_weights, dist_opt = checkpoint_of(dist_ck)
    one_weights, one_opt = checkpoint_of(one_ck)
    assert_close(dist_weights, one_weights)
    assert_close(simulated_ddp(load_file(first), epochs=2, shuffle=False)[0], one_weights)
    assert dist_opt["param_groups"][0]["lr"] == one_opt["param_groups"][0]["lr"]


def test_resume_auto_of_a_stopped_two_rank_run_equals_the_straight_run(sh):
    text, first = make(sh)
    straight, resumed, log = sh.tmp("straight.safetensors"), sh.tmp("resumed.safetensors"), sh.tmp("run")
    sh(text + "torch fit $m $o $L --loss mse_loss --sched $s --epochs 3 --nproc_per_node 2 >/dev/null; torch nn save $m %s"
       % straight)
    text, _ = make(sh)  # the same objects afresh (a loader's epoch count goes on after a fit: its shuffle too)
    # 4 steps an epoch: --max_steps 6 stops mid-epoch 2
    sh(text + "torch nn load $m %s; "
       "torch fit $m $o $L --loss mse_loss --sched $s --epochs 3 --nproc_per_node 2 --log %s --max_steps 6 >/dev/null; "
       "torch fit $m $o $L --loss mse_loss --sched $s --epochs 3 --nproc_per_node 2 --log %s --resume auto >/dev/null; "
       "torch nn save $m %s" % (first, log, log, resumed))
    assert_close(load_file(resumed), load_file(straight))
    with open(os.path.join(log, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    assert [r["step"] for r in rows if r["kind"] == "step"] == list(range(1, 13))
    assert [r["epoch"] for r in rows if r["kind"] == "epoch"] == [1, 2, 3]


def test_a_one_process_checkpoint_is_not_resumed_by_a_distributed_run(sh):
    text, _ = make(sh)
    log = sh.tmp("run")
    r = sh.run(text + "torch fit $m $o $L --loss mse_loss --log %s >/dev/null 2>&1 && torch fit $m $o $L --epochs 2 --log %s "
               "--resume auto --nproc_per_node 2" % (log, log))
    assert r.code == 4 and r.err.startswith("torch: fit: ") and "one-process fit" in r.err
    assert "[state_mismatch]" in r.err


def test_static_rendezvous_at_a_given_address_runs_one_node(sh):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    text, first = make(sh)
    saved = sh.tmp("w.safetensors")
    sh(text + "torch fit $m $o $L --loss mse_loss --sched $s --epochs 1 --nproc_per_node 2 --nnodes 1 --node_rank 0 "
       "--rdzv 127.0.0.1:%d >/dev/null; torch nn save $m %s" % (port, saved))
    assert_close(load_file(saved), simulated_ddp(load_file(first), epochs=1)[0])


@pytest.mark.parametrize("flags,code,words", [
    ("--nproc_per_node 2 --nnodes 2", "missing_argument", "--rdzv HOST:PORT"),
    ("--nproc_per_node 2 --strategy zero", "bad_argument", "ddp or fsdp"),
    ("--nproc_per_node 0", "bad_argument", "at least 1"),
    ("--nproc_per_node 2 --rdzv nowhere", "bad_argument", "HOST:PORT"),
    ("--strategy fsdp", "missing_argument", "--nproc_per_node N"),
    ("--nproc_per_node 1 --nnodes 2 --rdzv 10.0.0.1:29500", "untrusted_network", "--trusted_network"),
])
def test_launch_options_are_checked_before_anything_starts(sh, flags, code, words):
    text, _ = make(sh)
    r = sh.run(text + "torch fit $m $o $L --loss mse_loss " + flags)
    assert r.code == 2 and ("[%s]" % code) in r.err and words in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1


def test_two_nodes_each_with_its_own_daemon_train_as_one_run_and_both_daemons_get_the_result(sh, fresh_sh):
    """Two "hosts" on this one: two daemons, one rank each, the static rendezvous at node 0's address.
    DDP starts every rank from rank 0's weights, so node 1's own first weights do not matter."""
    other = fresh_sh()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    node = "torch fit $m $o $L --loss mse_loss --sched $s --epochs 2 --nproc_per_node 1 --nnodes 2 --rdzv 127.0.0.1:%d " % port
    text1, _ = make(other)
    job, model = other(text1 + "j=$(%s --node_rank 1 --detach); echo $j $m" % node).split()
    text0, first = make(sh)
    w0, w1 = sh.tmp("w0.safetensors"), sh.tmp("w1.safetensors")
    rows = sh(text0 + "%s --node_rank 0 --json; torch nn save $m %s" % (node, w0), timeout=300)
    r = other.run("torch job wait %s; echo wait=$?; torch nn save %s %s" % (job, model, w1), timeout=300)
    assert "wait=0" in r.out, r.err
    assert [json.loads(x)["epoch"] for x in rows.splitlines()] == [1, 2]
    want = simulated_ddp(load_file(first), epochs=2)[0]
    assert_close(load_file(w0), want)
    assert_close(load_file(w1), want)
