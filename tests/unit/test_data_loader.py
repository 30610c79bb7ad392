"""data/loader.py with worker processes: they persist from epoch to epoch (persistent_workers), and the batches
stay those of PyTorch's DataLoader without workers, reshuffled every epoch, and resumed mid-epoch exactly."""
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from torchsh.data.loader import Loader

pytestmark = pytest.mark.slow  # worker processes start from a forkserver: seconds

X, Y = torch.randn(30, 4, generator=torch.Generator().manual_seed(1)), torch.arange(30)


def _epoch(loader):
    out = []
    while (batch := loader.next_batch()) is not None:
        out.append(batch)
    return out


def _same(got, want):
    return len(got) == len(want) and all(torch.equal(a, b) for g, w in zip(got, want) for a, b in zip(g, w))


def _worker_pids(loader):
    return [w.pid for w in loader.loader._iterator._workers]  # DataLoader keeps a persistent workers' iterator


def test_workers_persist_across_epochs_and_each_epoch_is_pytorchs_shuffle():
    ref = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(3))
    loader = Loader(TensorDataset(X, Y), 8, shuffle=True, seed=3, num_workers=2)
    first = _epoch(loader)
    pids = _worker_pids(loader)
    rest = _epoch(loader) + _epoch(loader)
    assert _worker_pids(loader) == pids  # the same processes served all three epochs
    assert _same(first + rest, [tuple(b) for _ in range(3) for b in ref])


def test_a_state_taken_mid_epoch_resumes_with_workers_exactly():
    plain = Loader(TensorDataset(X, Y), 8, shuffle=True, seed=5)
    want = _epoch(plain) + _epoch(plain)
    loader = Loader(TensorDataset(X, Y), 8, shuffle=True, seed=5, num_workers=2)
    taken = _epoch(loader) + [loader.next_batch()]
    resumed = Loader(TensorDataset(X, Y), 8, shuffle=True, seed=99, num_workers=2)
    resumed.load_state_dict(loader.state_dict())
    assert _same(taken + _epoch(resumed), want)


def test_a_piece_backed_loader_with_workers_resumes_mid_epoch_exactly_and_sees_every_item_once():
    from support.pieced import pieced
    sizes = [23, 9, 31, 14, 27, 6, 18]
    straight = Loader(pieced(sizes), 8, shuffle=True, seed=5, num_workers=2, shuffle_buffer=20)
    want = [b[1].tolist() for b in _epoch(straight) + _epoch(straight)]
    assert sorted(i for b in want[:len(want) // 2] for i in b) == list(range(sum(sizes)))
    loader = Loader(pieced(sizes), 8, shuffle=True, seed=5, num_workers=2, shuffle_buffer=20)
    taken = [b[1].tolist() for b in [loader.next_batch() for _ in range(6)]]
    resumed = Loader(pieced(sizes), 8, shuffle=True, seed=99, num_workers=2, shuffle_buffer=20)
    resumed.load_state_dict(loader.state_dict())
    assert taken + [b[1].tolist() for b in _epoch(resumed) + _epoch(resumed)] == want
