"""`torch data tensors`, `torch data loader`, `torch data next`: PyTorch's DataLoader batches, epoch after
epoch, with a silent exit 1 at each epoch's end, so `while b=$(torch data next $L)` is a bash loop."""
import json
import os

import pytest
import torch
from safetensors.torch import load_file
from torch.utils.data import DataLoader, TensorDataset

X = torch.randn(10, 3, generator=torch.Generator().manual_seed(1))
Y = torch.arange(10)

# Every batch of E epochs saved in order (x0 y0 x1 y1 …), a line per epoch end (--keep: each batch outlives
# the next `data next`, which would otherwise free it)
EPOCHS = ("hs=(); for e in $(seq {epochs}); do while b=$(torch data next --keep $L); do hs+=($b); done; "
          "echo end $?; done; torch save ${{hs[@]}} {out}")


def batches_from_bash(sh, flags, epochs, after=""):
    x, y = sh.put(X), sh.put(Y)
    out = sh.tmp("batches.safetensors")
    text = sh("L=$(torch data loader $(torch data tensors %s %s) %s); " % (x, y, flags)
              + EPOCHS.format(epochs=epochs, out=out) + after)
    saved = load_file(out)
    flat = [saved[str(i)] for i in range(len(saved))]
    return list(zip(flat[0::2], flat[1::2])), text


def test_shuffled_batches_equal_pytorch_dataloader_reshuffled_every_epoch(sh):
    got, text = batches_from_bash(sh, "--batch_size 4 --shuffle --seed 3", 3)
    ref = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(3))
    want = [tuple(b) for _ in range(3) for b in ref]
    assert len(got) == len(want) == 9
    assert all(torch.equal(g[0], w[0]) and torch.equal(g[1], w[1]) for g, w in zip(got, want))
    assert [g[1].tolist() for g in got[:3]] != [g[1].tolist() for g in got[3:6]]  # a new order each epoch


def test_unshuffled_loader_keeps_order_and_drop_last_drops_the_short_batch(sh):
    got, _ = batches_from_bash(sh, "--batch_size 4 --drop_last", 2)
    assert [g[1].tolist() for g in got] == [[0, 1, 2, 3], [4, 5, 6, 7]] * 2


def test_end_of_epoch_exits_1_silently_and_the_next_call_starts_the_next_epoch(sh):
    x = sh.put(X)
    r = sh.run("L=$(torch data loader $(torch data tensors %s) --batch_size 8); torch data next $L >/dev/null; "
               "torch data next $L >/dev/null; torch data next $L; echo \"status $?\"; "
               "torch value $(torch data next $L)" % x)
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert lines[0] == "status 1"
    assert torch.allclose(torch.tensor(eval(lines[1])), X[:8])


def test_next_prints_one_handle_per_batch_field(sh):
    x, y = sh.put(X), sh.put(Y)
    out = sh("torch data next $(torch data loader $(torch data tensors %s %s %s) --batch_size 2)" % (x, y, x))
    assert [h.split("://")[0] for h in out.splitlines()] == ["tensor"] * 3


def test_without_seed_the_shuffle_follows_the_global_rng(sh):
    x = sh.put(Y)
    run = "torch manual_seed 5; torch value $(torch data next $(torch data loader $(torch data tensors %s) " \
          "--batch_size 10 --shuffle))" % x
    assert sh(run) == sh(run)


def test_tensors_of_different_lengths_are_a_shape_error(sh):
    r = sh.run("torch data tensors $(torch randn 4 2) $(torch randn 5)")
    assert r.code == 4 and "[shape_mismatch]" in r.err and "4 5" in r.err


def test_loader_shows_in_the_census_with_its_batches(sh):
    x = sh.put(X)
    out = sh("L=$(torch data loader $(torch data tensors %s) --batch_size 3); torch data next $L >/dev/null; "
             "torch tensors --json | grep -o \"{[^{]*$L[^}]*}\"" % x)
    assert '"batches":4' in out and '"position":1' in out and '"kind":"loader"' in out


def test_worker_processes_give_the_same_batches(sh):
    plain, _ = batches_from_bash(sh, "--batch_size 4 --shuffle --seed 3", 2)
    workers, _ = batches_from_bash(sh, "--batch_size 4 --shuffle --seed 3 --num_workers 2", 2)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(plain, workers))
    assert len(workers) == 6


@pytest.mark.slow
def test_worker_processes_are_not_forks_of_the_daemon_and_end_with_it_even_after_kill_9(fresh_sh):
    """A fork would hold the daemon's sockets and its threads' locks: the workers come from a forkserver,
    and they (and the forkserver) end once the daemon is gone, however it went."""
    import json
    import os
    import signal
    import time
    sh = fresh_sh()
    pid = json.loads(sh("torch daemon status --json"))["pid"]
    sh("L=$(torch data loader $(torch data tensors $(torch randn 40 2)) --batch_size 4 --num_workers 2); "
       "torch data next $L >/dev/null")  # the epoch's workers now run, held by the loader's iterator
    daemon_cmdline = open("/proc/%d/cmdline" % pid, "rb").read()
    children = _children(pid)
    assert children  # the forkserver (and multiprocessing's resource tracker)
    assert all(open("/proc/%d/cmdline" % c, "rb").read() != daemon_cmdline for c in children)
    family = children + [g for c in children for g in _children(c)]
    assert len(family) >= 3  # the forkserver's two workers among them
    os.kill(pid, signal.SIGKILL)
    os.unlink(sh.socket)  # what the dead daemon left; the fixture would wait for it to go
    deadline = time.monotonic() + 20
    while [p for p in family if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in family if _alive(p)], "processes outlived the daemon"


def _children(pid):
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(p) == pid]


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _ppid(proc):
    try:
        with open("/proc/%s/stat" % proc) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_a_freed_loader_is_gone(sh):
    r = sh.run("L=$(torch data loader $(torch data tensors $(torch randn 4 2))); torch free $L; torch data next $L")
    assert r.code == 3 and "[unknown_handle]" in r.err


def _objects(sh):
    return sum(json.loads(sh("torch daemon status --json"))["objects"].values())


def _rss(sh):
    return json.loads(sh("torch daemon status --json"))["rss_bytes"]


# The README's loop, for STEPS steps over as many epochs as that takes
README_LOOP = ("steps=0; while [ $steps -lt {steps} ]; do while b=$(torch data next $L); do "
               "torch train_step $m $o $b --loss mse_loss >/dev/null; steps=$((steps + 1)); "
               "[ $steps -lt {steps} ] || break; done; done")


def test_the_readme_loop_holds_one_batch_at_a_time_over_1000_steps(sh):
    """`data next` frees the batch it handed out before: 1,000 steps leave the census where 10 left it, and
    the daemon's memory with it (a kept batch is 256 KiB, so 1,000 of them would be 256 MiB more)."""
    x, y = sh.put(torch.randn(256, 1024)), sh.put(torch.randn(256, 1))
    setup = ("L=$(torch data loader $(torch data tensors %s %s) --batch_size 64 --shuffle --seed 0); "
             "m=$(torch nn linear 1024 1); o=$(torch optim sgd $m --lr 0.001); " % (x, y))
    loop = setup + README_LOOP.format(steps=10) + "; torch daemon status --json; " + README_LOOP.format(steps=990)
    before = _objects(sh)
    out = sh(loop + "; torch daemon status --json; echo $L $m $o", timeout=1800).split("\n")
    warm, done = json.loads(out[0]), json.loads(out[1])
    assert sum(done["objects"].values()) == sum(warm["objects"].values()) == before + 6  # L m o, data, 1 batch
    assert done["rss_bytes"] - warm["rss_bytes"] < 64 << 20, (warm["rss_bytes"], done["rss_bytes"])
    sh("torch free %s %s" % (x, y) + "".join(" " + h for h in out[2].split()))


def test_a_kept_batch_outlives_the_next_call_and_a_batch_moved_out_of_its_scope_is_not_freed(sh):
    x = sh.put(X)
    kept, a, b = sh("L=$(torch data loader $(torch data tensors %s) --batch_size 2); kept=$(torch data next $L --keep); "
                    "a=$(torch data next $L); b=$(torch data next $L); echo $kept $a $b" % x).split()
    assert torch.equal(sh.fetch(kept), X[:2]) and torch.equal(sh.fetch(b), X[4:6])
    r = sh.run("torch value %s" % a)
    assert r.code != 0 and "[unknown_handle]" in r.err  # a's batch was freed by the call after it
    # `torch keep` in a scope moves the batch out of it: the next `data next` leaves it alone
    moved = sh("L=$(torch data loader $(torch data tensors %s) --batch_size 2); torch scope -- bash -c '"
               "b=$(torch data next '$L'); torch keep $b >/dev/null; torch data next '$L' >/dev/null; echo $b'" % x)
    assert torch.equal(sh.fetch(moved.strip()), X[:2])
