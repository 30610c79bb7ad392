"""`torch fit … --nproc_per_node 2` on torch.distributed (gloo, CPU) through real bash.

What the equality tests compare: with DDP each of the 2 ranks takes its DistributedSampler share of the
data (shuffled with the loader's seed + the epoch, set_epoch every epoch) in batches of the loader's
batch size B, and DDP averages the ranks' gradients. Each rank's loss is a mean over B samples, so the
averaged gradient is the gradient of the mean over the union of both ranks' batches: one optimizer step
of a single process over those 2B samples. `simulated_ddp` replays exactly that in this process, with
PyTorch's own DistributedSampler giving the shares; without shuffling the union of batch k is samples
2Bk..2B(k+1)-1, which is the one-process `torch fit` over batches of 2B. Within 1e-6 (the two ranks'
gradients are summed in another order than one process sums them).
"""
import ipaddress
import json
import os
import re
import signal
import socket

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch.utils.data import DistributedSampler

from torchsh.train.distributed import netns
from support.waiting import process_gone, wait_until

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)

N, B, SEED, LR, WORLD = 48, 6, 11, 0.1, 2   # 48 samples, 6 per rank per step: 4 steps an epoch
X = torch.randn(N, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randn(N, 1, generator=torch.Generator().manual_seed(2))
STOPPED = re.compile(r"stopped at epoch (\d+) step (\d+)")
TOL = 1e-6


def python_model(weights):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    model.load_state_dict(weights)
    return model


def simulated_ddp(weights, epochs=None, steps=None, shuffle=True, batch=B):
    """2 DDP ranks replayed in one process, each taking `batch` samples a step: (weights, optimizer state,
    epoch losses). --accum K over batches of B is batch=K*B: a rank's K micro-batches are its next K*B
    samples, their losses divided by K sum to the mean over them."""
    model = python_model(weights)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    samplers = [DistributedSampler(range(N), num_replicas=WORLD, rank=r, shuffle=shuffle, seed=SEED)
                for r in range(WORLD)]
    losses, taken, epoch = [], 0, 0
    while (epochs is None or epoch < epochs) and (steps is None or taken < steps):
        for s in samplers:
            s.set_epoch(epoch)
        shares = [list(s) for s in samplers]
        total = 0.0
        for k in range(len(shares[0]) // batch):
            if steps is not None and taken == steps:
                break
            union = torch.tensor(sum((share[k * batch:(k + 1) * batch] for share in shares), []))
            opt.zero_grad()
            loss = F.mse_loss(model(X[union]), Y[union])
            loss.backward()
            opt.step()
            total, taken = total + loss.item() * len(union), taken + 1
        losses.append(total / N)
        sched.step()
        epoch += 1
    return model.state_dict(), opt.state_dict(), losses


def make(sh, shuffle=True):
    """Shell text making $m $o $s $L (per-rank batch B) and saving $m's first weights; the first file."""
    first = sh.tmp("first.safetensors")
    text = ("m=$(torch nn sequential 'linear 4 8' relu 'linear 8 1'); torch nn save $m %s; "
            "o=$(torch optim sgd $m --lr %s --momentum 0.9); s=$(torch sched step_lr $o --step_size 1 --gamma 0.5); "
            "L=$(torch data loader $(torch data tensors %s %s) --batch_size %d %s --seed %d); "
            % (first, LR, sh.put(X), sh.put(Y), B, "--shuffle" if shuffle else "", SEED))
    return text, first


def checkpoint_of(path):
    """(model weights, optimizer state_dict) of a `torch checkpoint save` file."""
    from torchsh.formats import statefile as state_file
    from torchsh.formats import stfile
    tensors, meta = stfile.read(path)
    weights = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    return weights, state_file.decode(meta["optimizer"]["state"], tensors)


def assert_close(got, want):
    assert got.keys() == want.keys()
    for k in want:
        assert torch.allclose(got[k], want[k], rtol=0, atol=TOL), (k, (got[k] - want[k]).abs().max())


def fit_processes(sh):
    """Live processes of a distributed fit of `sh`'s daemon: the launcher and its ranks carry TORCHSH_FIT_RUN,
    and the daemon's environment, its TORCHSH_SOCKET included (other daemons on the machine run fits too)."""
    found, ours = [], b"\0TORCHSH_SOCKET=%s\0" % sh.socket.encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = b"\0" + f.read() + b"\0"
        except OSError:
            continue
        if b"\0TORCHSH_FIT_RUN=" in env and ours in env and not process_gone(int(pid)):
            found.append(int(pid))
    return found


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


def listening_addresses(pid):
    """The local addresses pid's TCP sockets listen on (its own network namespace's tables)."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        with open("/proc/%d/net/%s" % (pid, table)) as f:
            for row in f.read().splitlines()[1:]:
                cols = row.split()
                if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                    found.append(ipaddress.ip_address(bytes.fromhex(cols[1].split(":")[0])[::-1]
                                                      if table == "tcp" else _ipv6(cols[1].split(":")[0])))
    return found


def _ipv6(hexaddr):
    raw = bytes.fromhex(hexaddr)  # four 32-bit words, each in host (little-endian) order
    return b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))


@pytest.mark.parametrize("isolate", ["1", "0"])
def test_while_two_ranks_train_every_listening_socket_of_the_run_is_on_loopback(sh, isolate):
    """torch.distributed authenticates nothing (and elastic's c10d rendezvous unpickles its store): the
    launcher's store and the ranks' gloo sockets must not be reachable from the network. Where user
    namespaces are allowed the run has a loopback of its own; TORCHSH_DIST_ISOLATE=0 (or a kernel that
    refuses them) leaves the loopback binding alone."""
    text, _ = make(sh)
    job = sh("export TORCHSH_DIST_ISOLATE=%s; " % isolate + text + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --nproc_per_node 2 --detach); "
             "for i in $(seq 1200); do torch job list | grep -q \"$j .*batch\" && break; sleep 0.05; done; echo $j",
             timeout=180)
    try:
        running = fit_processes(sh)
        addresses = {pid: listening_addresses(pid) for pid in running}
        assert len(addresses) >= 3 and any(addresses.values()), addresses  # the launcher and two ranks
        assert all(a.is_loopback for found in addresses.values() for a in found), addresses
        # where the kernel allows user namespaces, another user of this machine cannot reach them either
        namespaces = {os.readlink("/proc/%d/ns/net" % pid) for pid in running}
        if isolate == "1" and netns._unshare_argv() is not None:
            assert len(namespaces) == 1 and os.readlink("/proc/self/ns/net") not in namespaces
        else:
            assert namespaces == {os.readlink("/proc/self/ns/net")}
    finally:
        sh("torch job stop %s; torch job wait %s; true" % (job, job))
    assert wait_until(lambda: not fit_processes(sh), timeout=30)


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
