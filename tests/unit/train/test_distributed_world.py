"""A rank's hooks into fit's loop (train/distributed/world.py), in a gloo world of one process."""
import pytest
import torch
import torch.distributed as dist

from torchsh.train.distributed.world import RankWorld


@pytest.fixture
def world_of_one():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_ddp_exchanges_gradients_only_in_the_backward_that_closes_an_accumulation_window(world_of_one, tmp_path):
    world = RankWorld(str(tmp_path), "ddp", torch.device("cpu"), {})
    world.net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
    with world.gradient_sync(closes_window=False):
        assert world.net.require_backward_grad_sync is False  # DDP's no_sync: no all-reduce in this backward
    with world.gradient_sync(closes_window=True):
        assert world.net.require_backward_grad_sync is True
