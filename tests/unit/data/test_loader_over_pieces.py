"""data/loader.py over a piece-backed dataset: its batches are data/piecesampler.py's order from the loader's
generator, an epoch sees every item once, a state taken mid-epoch resumes in a fresh Loader bit for bit (passing
over whole windows), the pieces' caches are sized for the window once the memory budget admits it, and a
dataset without pieces ignores --shuffle_buffer (PyTorch's DataLoader batches, as before)."""
import pytest
import torch
from support.pieced import ROW_BYTES, pieced
from torch.utils.data import DataLoader, TensorDataset

from torchsh.data.loader import Loader
from torchsh.data.piecesampler import PieceSampler
from torchsh.errors import TorchshError

SIZES = [40, 13, 0, 52, 31, 27, 45, 8, 36, 19]
LENGTH = sum(SIZES)


def _epoch(loader):
    out = []
    while (batch := loader.next_batch()) is not None:
        out.append(batch)
    return out


def _ids(batches):
    return [b[1].tolist() for b in batches]


def test_the_batches_are_the_piece_samplers_order_from_the_loaders_seed():
    loader = Loader(pieced(SIZES), batch_size=16, shuffle=True, seed=7, shuffle_buffer=50)
    starts = torch.tensor([0, 40, 53, 105, 136, 163, 208, 216, 252])  # the empty piece merges away
    sampler = PieceSampler(starts, LENGTH, torch.Generator().manual_seed(7), True, 50, batch_size=16)
    want = []
    for _ in range(2):  # each epoch DataLoader draws its workers' base seed first, then the sampler its order
        torch.empty((), dtype=torch.int64).random_(generator=sampler.generator)
        want.append(list(sampler.batches()))
    epochs = [_epoch(loader) for _ in range(2)]
    assert [_ids(e) for e in epochs] == want
    assert all(torch.equal(x.squeeze(1), y.float()) for e in epochs for x, y in e)  # items are their rows
    assert _ids(epochs[0]) != _ids(epochs[1])


def test_without_shuffle_the_batches_are_in_index_order():
    got = [i for b in _ids(_epoch(Loader(pieced(SIZES), batch_size=16))) for i in b]
    assert got == list(range(LENGTH))


@pytest.mark.parametrize("taken", [1, 5, 11, 15])
def test_a_state_taken_mid_epoch_resumes_in_a_fresh_loader_bit_for_bit(taken):
    straight = Loader(pieced(SIZES), batch_size=16, shuffle=True, seed=3, shuffle_buffer=40)
    want = _ids(_epoch(straight) + _epoch(straight) + _epoch(straight))
    loader = Loader(pieced(SIZES), batch_size=16, shuffle=True, seed=3, shuffle_buffer=40)
    got = _ids(_epoch(loader) + [loader.next_batch() for _ in range(taken)])
    resumed = Loader(pieced(SIZES), batch_size=16, shuffle=True, seed=99, shuffle_buffer=40)
    resumed.load_state_dict(loader.state_dict())
    got += _ids(_epoch(resumed) + _epoch(resumed))
    assert got == want
    assert sorted(i for b in want[len(want) * 2 // 3:] for i in b) == list(range(LENGTH))


def test_a_resumed_epoch_passes_over_the_windows_it_took_without_reading_them():
    loader = Loader(pieced(SIZES), batch_size=16, shuffle=True, seed=3, shuffle_buffer=40)
    for _ in range(12):
        loader.next_batch()
    data = pieced(SIZES)
    resumed = Loader(data, batch_size=16, shuffle=True, seed=0, shuffle_buffer=40)
    resumed.load_state_dict(loader.state_dict())
    assert _ids([resumed.next_batch()]) == _ids([loader.next_batch()])
    assert resumed.batches.sampler.skipped_windows >= 3
    assert len(data.fields[1].reads) <= 3  # what the resumed epoch read: the next batch's pieces only


def test_a_state_from_another_window_or_worker_count_is_refused():
    state = Loader(pieced(SIZES), batch_size=16, shuffle=True, seed=3, shuffle_buffer=40).state_dict()
    with pytest.raises(ValueError, match="shuffle_buffer"):
        Loader(pieced(SIZES), batch_size=16, shuffle=True, seed=3, shuffle_buffer=80).load_state_dict(state)


class _Budget:
    """A memory budget that admits up to `room` bytes and says what it was asked."""

    def __init__(self, room):
        self.room, self.asked = room, []

    def admit_bytes(self, size, what):
        self.asked.append((size, what))
        if size > self.room:
            raise TorchshError("out_of_memory", "%s needs %d bytes" % (what, size))


def test_the_pieces_caches_hold_a_window_per_worker_once_the_budget_admits_it():
    data, budget = pieced(SIZES), _Budget(1 << 20)
    Loader(data, batch_size=16, shuffle=True, seed=0, shuffle_buffer=100, num_workers=2, budget=budget)
    want = (100 * 2 + max(SIZES)) * ROW_BYTES
    assert [f.piece_cache.limit for f in data.fields] == [want, want]
    assert budget.asked == [(2 * want, "the loader's shuffle buffer")]


def test_a_window_over_the_budget_is_refused_before_anything_is_read():
    data = pieced(SIZES)
    with pytest.raises(TorchshError) as e:
        Loader(data, batch_size=16, shuffle=True, seed=0, shuffle_buffer=10 ** 6, budget=_Budget(1 << 20))
    assert e.value.code == "out_of_memory" and "shuffle buffer" in str(e.value)
    assert not data.fields[0].reads and not data.fields[1].reads


def test_a_dataset_without_pieces_ignores_the_window_pytorchs_batches_as_before():
    x, y = torch.randn(30, 2, generator=torch.Generator().manual_seed(1)), torch.arange(30)
    loader = Loader(TensorDataset(x, y), batch_size=4, shuffle=True, seed=5, shuffle_buffer=7, budget=_Budget(0))
    ref = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(5))
    got = _epoch(loader) + _epoch(loader)
    want = [b for _ in range(2) for b in ref]
    assert len(got) == len(want) and all(torch.equal(a, b) for g, w in zip(got, want) for a, b in zip(g, w))
    assert "order" not in loader.state_dict()
