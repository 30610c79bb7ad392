"""train/distributed/shares.py over a piece-backed dataset, without a process group: rank r's share is the
contiguous slice r of the epoch's piece order (no padding, no duplicate: the counted batches of all ranks are the
dataset once), every rank takes as many batches (the short rank's last one an uncounted copy), and a share
resumes mid-epoch, padding included, from its state."""
import pytest
import torch
from support.pieced import pieced

from torchsh.data.piecesampler import PieceSampler
from torchsh.train.distributed.shares import DistLoader, rank_steps

SIZES = [9, 4, 12, 7, 3, 10, 6]  # 51 items


def _epoch(share):
    out = []
    while (batch := share.next_batch()) is not None:
        out.append((batch[1].tolist(), share.counted))
    return out


@pytest.mark.parametrize("world,batch_size", [(2, 5), (3, 4), (4, 3), (3, 17), (5, 2)])
def test_the_ranks_counted_batches_are_the_dataset_once_and_all_ranks_step_together(world, batch_size):
    for epoch in range(2):
        shares = [DistLoader(pieced(SIZES), batch_size, True, False, 11, 0, world, r, epoch=epoch,
                             shuffle_buffer=batch_size) for r in range(world)]
        epochs = [_epoch(s) for s in shares]
        assert {len(e) for e in epochs} == {len(shares[0])} == {rank_steps(51, world, batch_size, False)}
        counted = [i for e in epochs for ids, c in e if c for i in ids]
        assert sorted(counted) == list(range(51))  # no duplicate, no drop, no padding
        order = PieceSampler(torch.tensor([0, 9, 13, 25, 32, 35, 45]), 51, torch.Generator().manual_seed(11 + epoch),
                             True, batch_size, batch_size=batch_size)
        assert counted == list(order)  # rank r's share is slice r of one order
        whole = [DistLoader(pieced(SIZES), batch_size, True, False, 11, 0, world, r, epoch=epoch) for r in range(world)]
        assert all(w.sampler.window_rows == 51 for w in whole)  # no --shuffle_buffer: one window, a full shuffle
        for e in epochs:  # only a last batch may be uncounted, and it repeats the one before
            assert all(c for _, c in e[:-1])
            assert e[-1][1] or e[-1][0] == e[-2][0]


def test_with_drop_last_every_rank_takes_the_shortest_shares_whole_batches():
    shares = [DistLoader(pieced(SIZES), 4, True, True, 11, 0, 3, r) for r in range(3)]
    epochs = [_epoch(s) for s in shares]
    assert [len(e) for e in epochs] == [4, 4, 4]  # 17 items each: 4 whole batches of 4
    assert all(c and len(ids) == 4 for e in epochs for ids, c in e)
    assert len({i for e in epochs for ids, _ in e for i in ids}) == 48


def test_an_item_short_rank_repeats_its_last_batch_uncounted():
    shares = [DistLoader(pieced([5, 4]), 2, False, False, 0, 0, 2, r) for r in range(2)]  # shares of 4 and 5 items
    assert [_epoch(s) for s in shares] == [
        [([0, 1], True), ([2, 3], True), ([2, 3], False)],
        [([4, 5], True), ([6, 7], True), ([8], True)]]


@pytest.mark.parametrize("taken", [1, 3, 4, 5])
def test_a_share_resumes_mid_epoch_padding_included(taken):
    straight = DistLoader(pieced(SIZES), 5, True, False, 2, 0, 2, 0)
    want = _epoch(straight) + _epoch(straight)
    share = DistLoader(pieced(SIZES), 5, True, False, 2, 0, 2, 0)
    got = _epoch(share) + [(share.next_batch()[1].tolist(), share.counted) for _ in range(taken)]
    again = DistLoader(pieced(SIZES), 5, True, False, 2, 0, 2, 0)
    again.load_state_dict(share.state_dict())
    assert got + _epoch(again) == want
    assert want[len(want) // 2 - 1][1] is False  # rank 0 (25 items) ends on a copy: the resume crossed it


def test_fit_weights_an_uncounted_batch_zero():
    from torchsh.train.fit import run_fit
    from torchsh.train.plan import FitPlan
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)
    want = torch.nn.Linear(1, 1)
    want.load_state_dict(model.state_dict())
    share = DistLoader(pieced([5, 4]), 2, False, False, 0, 0, 2, 0)  # [0, 1], [2, 3], then [2, 3] uncounted
    events = []
    plan = FitPlan(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.01), loader=share,
                   loss=torch.nn.functional.mse_loss, target_dtype=torch.float32, target_shape=(1,))
    run_fit(None, plan, events.append, lambda: False)
    sgd, losses = torch.optim.SGD(want.parameters(), lr=0.01), []
    for ids in ([0, 1], [2, 3]):  # PyTorch: the counted batches alone
        x = torch.tensor(ids, dtype=torch.float32).unsqueeze(1)
        sgd.zero_grad()
        loss = torch.nn.functional.mse_loss(want(x), x)
        loss.backward()
        sgd.step()
        losses.append(loss.item())
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), want.parameters()))
    row = next(e for e in events if e["event"] == "epoch")
    assert row["loss"] == pytest.approx(sum(losses) / 2)  # the copy adds no loss


def test_validation_shares_of_pieces_are_contiguous_and_cover_the_data_once():
    from torchsh.train.distributed.shares import ValShare
    shares = [ValShare(pieced(SIZES), 4, 0, 3, r) for r in range(3)]
    got = [[i for batch, counted in s.batches() if counted for i in batch[1].tolist()] for s in shares]
    assert got == [list(range(0, 17)), list(range(17, 34)), list(range(34, 51))]
