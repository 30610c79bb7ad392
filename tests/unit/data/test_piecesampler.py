"""data/piecesampler.py: the loader's order over a piece-backed dataset. An epoch is one permutation of the
dataset whatever the pieces, window, batch size, workers and ranks; ranks take contiguous shares of one order;
pieces are permuted and rows shuffled within windows; batches are dealt so each worker reads its own pieces; a
resumed epoch passes over whole windows and gives the remaining batches of the straight one."""
import collections

import pytest
import torch
from hypothesis import given, settings, strategies as st
from support.pieced import pieced
from torch.utils.data import DataLoader, get_worker_info

from torchsh.data.piecesampler import PieceBatches, PieceSampler, _Epoch

SIZES = st.lists(st.integers(0, 12), min_size=1, max_size=12)


def _starts(sizes):
    sizes = torch.tensor(sizes, dtype=torch.int64)
    return torch.cumsum(sizes, 0) - sizes, int(sizes.sum())


def _sampler(sizes, seed=0, shuffle=True, window=4, workers=1, rank=0, world=1, batch_size=3):
    starts, length = _starts(sizes)
    return PieceSampler(starts, length, torch.Generator().manual_seed(seed), shuffle, window, workers=workers,
                        rank=rank, world=world, batch_size=batch_size)


def _piece_of(starts, indices):
    return (torch.searchsorted(starts, torch.tensor(indices, dtype=torch.int64), right=True) - 1).tolist()


@settings(max_examples=100, deadline=None)
@given(SIZES, st.integers(1, 40), st.integers(1, 5), st.integers(1, 4), st.booleans(), st.booleans())
def test_an_epoch_is_one_permutation_of_the_dataset(sizes, window, batch_size, workers, shuffle, drop_last):
    sampler = _sampler(sizes, shuffle=shuffle, window=window, workers=workers, batch_size=batch_size)
    batches = list(sampler.batches(drop_last=drop_last))
    flat = [i for b in batches for i in b]
    length = sum(sizes)
    assert len(flat) == len(set(flat))
    if drop_last:
        assert all(len(b) == batch_size for b in batches) and len(flat) == length // batch_size * batch_size
        assert set(flat) <= set(range(length))
    else:
        assert sorted(flat) == list(range(length)) == sorted(sampler)
        assert all(len(b) == batch_size for b in batches[:-1])


@settings(max_examples=60, deadline=None)
@given(SIZES, st.integers(1, 40), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4))
def test_ranks_take_contiguous_shares_of_one_order(sizes, window, batch_size, workers, world):
    whole = list(_sampler(sizes, window=window, batch_size=batch_size))
    shares = [list(_sampler(sizes, window=window, rank=r, world=world, batch_size=batch_size)) for r in range(world)]
    assert [i for s in shares for i in s] == whole  # one worker: each share in the order it has in the epoch
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    dealt = [list(_sampler(sizes, window=window, workers=workers, rank=r, world=world, batch_size=batch_size))
             for r in range(world)]
    assert [sorted(s) for s in dealt] == [sorted(s) for s in shares]  # workers reorder within a share only


def test_without_shuffle_the_order_is_the_index_order():
    sampler = _sampler([5, 0, 7, 3], shuffle=False, batch_size=4)
    assert list(sampler.batches()) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14]]


def test_without_shuffle_workers_read_their_dealt_pieces_in_index_order():
    # pieces 0..3 (rows 0-4, none, 5-11, 12-14) dealt to workers 0, 1, 0, 1; batch k is worker k % 2's next rows,
    # topped up from the other's when its own run out: an IterableDataset split by get_worker_info reads so
    sampler = _sampler([5, 0, 7, 3], shuffle=False, workers=2, batch_size=2)
    assert list(sampler.batches()) == [[0, 1], [12, 13], [2, 3], [14, 4], [5, 6], [7, 8], [9, 10], [11]]


def test_pieces_are_permuted_and_each_read_in_one_run_when_a_window_is_a_piece():
    sizes = [6, 9, 4, 8, 7, 5]
    starts, _ = _starts(sizes)
    sampler = _sampler(sizes, window=1)  # every piece holds a window's rows: a window is one piece
    orders = []
    for _ in range(3):  # epochs: the generator goes on
        pieces = _piece_of(starts, list(sampler))
        runs = [p for k, p in enumerate(pieces) if k == 0 or pieces[k - 1] != p]
        assert sorted(runs) == list(range(len(sizes)))  # each piece read in one run, once
        orders.append(runs)
    assert orders[0] != orders[1] or orders[1] != orders[2]


def test_rows_are_shuffled_within_windows_of_at_least_the_given_rows():
    sizes = [5] * 12
    starts, _ = _starts(sizes)
    flat = list(_sampler(sizes, window=12))  # windows of 3 pieces (15 rows)
    pieces = _piece_of(starts, flat)
    windows = [set(pieces[k:k + 15]) for k in range(0, 60, 15)]
    assert all(len(w) == 3 for w in windows) and set().union(*windows) == set(range(12))
    changes = sum(a != b for a, b in zip(pieces[:14], pieces[1:15]))
    assert changes > 2  # the window's rows shuffled across its 3 pieces, not read piece after piece


def test_a_seed_repeats_the_epochs_and_another_seed_changes_them():
    sizes = [7, 3, 9, 5]
    assert list(_sampler(sizes, seed=4)) == list(_sampler(sizes, seed=4))
    assert list(_sampler(sizes, seed=4)) != list(_sampler(sizes, seed=5))


@pytest.mark.parametrize("workers,world,rank", [(1, 1, 0), (3, 1, 0), (2, 3, 1), (4, 2, 1)])
def test_a_fast_skip_gives_the_remaining_batches_of_the_straight_epoch(workers, world, rank, monkeypatch):
    sizes = [11, 4, 0, 13, 9, 6, 12, 8, 3, 10, 7, 5]
    sampler = _sampler(sizes, window=10, workers=workers, world=world, rank=rank, batch_size=4)
    straight = list(sampler.batches())
    after = sampler.generator.get_state()
    sampler.generator.manual_seed(0)
    windows = _Epoch(sampler).windows
    cut = {i for i, w in enumerate(windows) if w[2] < sampler.lo or w[3] > sampler.hi}  # built to plan the epoch
    built, rows = set(), _Epoch.rows
    monkeypatch.setattr(_Epoch, "rows", lambda self, i: (built.add(i), rows(self, i))[1])
    skipped = []
    for skip in range(len(straight) + 2):
        sampler.generator.manual_seed(0)
        built.clear()
        assert list(sampler.batches(skip)) == straight[skip:]
        assert torch.equal(sampler.generator.get_state(), after)  # the next epoch draws the same
        skipped.append(sampler.skipped_windows)
        assert not set(range(skipped[-1])) & (built - cut)  # a window passed over is not built
    assert skipped[0] == 0 and skipped[len(straight)] == len(windows) >= 3
    assert skipped == sorted(skipped)


def _readers(batches, starts, workers):
    """Pieces read by more than one worker when batch k goes to worker k % workers (DataLoader's round robin)."""
    who = collections.defaultdict(set)
    for k, batch in enumerate(batches):
        for p in _piece_of(starts, batch):
            who[p].add(k % workers)
    return sum(len(w) > 1 for w in who.values())


@pytest.mark.parametrize("workers,window,batch_size", [(2, 32, 16), (4, 500, 16), (4, 2000, 64)])
def test_each_piece_is_read_by_one_worker_but_a_few(workers, window, batch_size):
    sizes = torch.randint(50, 150, (200,), generator=torch.Generator().manual_seed(1)).tolist()
    starts, _ = _starts(sizes)
    dealt = list(_sampler(sizes, window=window, workers=workers, batch_size=batch_size).batches())
    plain = list(_sampler(sizes, window=window, workers=1, batch_size=batch_size).batches())
    assert _readers(plain, starts, workers) > 190  # the same order undealt: nearly every piece by several
    assert _readers(dealt, starts, workers) <= 15  # measured 4 (2 workers) to 14 (4 workers) of 200


class _WhoReads(torch.utils.data.Dataset):
    """Item i is (i, the id of the worker that read it)."""

    def __init__(self, length):
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return i, get_worker_info().id


@pytest.mark.slow  # worker processes
def test_two_workers_over_two_ranks_see_every_id_once_each_batch_on_its_worker():
    sizes = [17, 5, 23, 11, 9, 30, 14, 6]
    starts, length = _starts(sizes)
    seen, readers = [], collections.defaultdict(set)
    for rank in range(2):
        sampler = PieceSampler(starts, length, torch.Generator().manual_seed(3), True, 10, workers=2, rank=rank,
                               world=2, batch_size=4)
        want = list(sampler.batches())
        sampler.generator.manual_seed(3)
        loader = DataLoader(_WhoReads(length), batch_sampler=PieceBatches(sampler, False), num_workers=2,
                            multiprocessing_context="forkserver")
        got = [(ids.tolist(), workers.tolist()) for ids, workers in loader]
        assert [ids for ids, _ in got] == want
        assert all(set(w) == {k % 2} for k, (_, w) in enumerate(got))  # batch k on worker k % 2
        seen += [i for ids, _ in got for i in ids]
        for ids, w in got:
            for p in _piece_of(starts, ids):
                readers[(rank, p)].add(w[0])
    assert sorted(seen) == list(range(length))  # no duplicate, no drop
    assert sum(len(r) > 1 for r in readers.values()) <= 6


def test_the_test_dataset_has_the_pieces_it_was_given():
    from torchsh.data import pieces
    assert pieces.piece_starts(pieced([3, 4, 2])).tolist() == [0, 3, 7]
