"""The oracle and the helpers of tests/e2e/test_fit_distributed*.py (`torch fit … --nproc_per_node 2`, gloo on
CPU): the data (N samples X, Y; B a rank's batch), `simulated_ddp` (2 DDP ranks replayed in one process: why
that is the oracle, test_fit_distributed.py's docstring), `make` (the shell text making the model, optimizer,
scheduler and loader), `checkpoint_of`, `assert_close` (within TOL) and `fit_processes` (a daemon's live
launcher and ranks)."""
import os
import re

import torch
import torch.nn.functional as F
from torch.utils.data import DistributedSampler

from support.waiting import process_gone

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
