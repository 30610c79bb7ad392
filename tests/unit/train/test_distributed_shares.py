"""The pieces of `fit --nproc_per_node` that run without a process group: a rank's loader share equals
PyTorch's DataLoader over a DistributedSampler (set_epoch every epoch) and resumes mid-epoch; the
validation shares cover every sample once; FSDP's optimizer-state keys; the launch options."""
import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from torchsh.data.loader import Loader
from torchsh.errors import TorchshError
from torchsh.train.distributed import launch, rendezvous
from torchsh.train.distributed.shares import DistLoader, ValShare
from torchsh.train.distributed.world import _by_index, _by_name
from torchsh.train.distributed.supervisor import Launch

DATA = TensorDataset(torch.arange(23.0).unsqueeze(1), torch.arange(23))


def epochs_of(loader, epochs):
    out = []
    for _ in range(epochs):
        batches = []
        while (b := loader.next_batch()) is not None:
            batches.append(b[1].tolist())
        out.append(batches)
    return out


@pytest.mark.parametrize("shuffle,drop_last", [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("rank", [0, 1, 2])
def test_a_rank_share_equals_dataloader_over_distributed_sampler_with_set_epoch(shuffle, drop_last, rank):
    sampler = DistributedSampler(DATA, num_replicas=3, rank=rank, shuffle=shuffle, seed=5, drop_last=drop_last)
    want = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        want.append([y.tolist() for _, y in DataLoader(DATA, batch_size=3, sampler=sampler, drop_last=drop_last)])
    got = epochs_of(DistLoader(DATA, 3, shuffle, drop_last, 5, 0, 3, rank), 3)
    assert got == want


def test_the_epoch_count_given_starts_the_sampler_there():
    later = DistLoader(DATA, 4, True, False, 5, 0, 2, 0, epoch=2)
    fresh = DistLoader(DATA, 4, True, False, 5, 0, 2, 0)
    assert epochs_of(later, 1) == epochs_of(fresh, 3)[2:]


def test_a_share_resumes_mid_epoch_from_its_state():
    first = DistLoader(DATA, 2, True, False, 9, 0, 2, 1)
    straight = epochs_of(DistLoader(DATA, 2, True, False, 9, 0, 2, 1), 2)
    epochs_of(first, 1)
    taken = [first.next_batch()[1].tolist() for _ in range(3)]
    again = DistLoader(DATA, 2, True, False, 9, 0, 2, 1)
    again.load_state_dict(first.state_dict())
    assert taken + epochs_of(again, 1)[0] == straight[1]


def test_a_share_refuses_a_one_process_loader_state_and_another_world_size():
    share = DistLoader(DATA, 2, True, False, 9, 0, 2, 0)
    with pytest.raises(ValueError, match="one-process fit"):
        share.load_state_dict(Loader(DATA, batch_size=2, shuffle=True, seed=9).state_dict())
    with pytest.raises(ValueError, match="3 ranks"):
        share.load_state_dict(DistLoader(DATA, 2, True, False, 9, 0, 3, 0).state_dict())


def test_validation_shares_cover_every_sample_once_and_keep_the_ranks_in_step():
    shares = [ValShare(DATA, 4, 0, 3, r) for r in range(3)]
    seen, runs = [], []
    for share in shares:
        batches = list(share.batches())
        runs.append(len(batches))
        seen += [i for b, counted in batches if counted for i in b[1].tolist()]
    assert sorted(seen) == list(range(23))
    assert len(set(runs)) == 1  # uncounted repeats fill up the shorter shares (FSDP gathers in every forward)


def test_optimizer_state_keys_go_to_parameter_names_and_back():
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    opt = torch.optim.Adam([{"params": [model[0].weight, model[1].weight]},
                            {"params": [model[0].bias, model[1].bias], "lr": 0.5}])
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
    names = ["0.weight", "1.weight", "0.bias", "1.bias"]
    by_name = _by_name(opt.state_dict(), names)
    assert set(by_name["state"]) == set(names) and by_name["param_groups"][1]["params"] == ["0.bias", "1.bias"]
    back = _by_index(by_name, names)
    assert back["param_groups"] == opt.state_dict()["param_groups"]
    assert all(torch.equal(back["state"][i]["exp_avg"], s["exp_avg"]) for i, s in opt.state_dict()["state"].items())


@pytest.mark.parametrize("options,code", [
    (dict(nproc_per_node=0), "bad_argument"),
    (dict(nproc_per_node=2, nnodes=2), "missing_argument"),
    (dict(nproc_per_node=2, nnodes=2, node_rank=2, rdzv="h:1"), "bad_argument"),
    (dict(nproc_per_node=2, rdzv="h:99999"), "bad_argument"),
    (dict(nproc_per_node=2, strategy="zero"), "bad_argument"),
    (dict(nproc_per_node=2, timeout=0), "bad_argument"),
])
def test_launch_options_are_refused_with_a_code(options, code):
    with pytest.raises(TorchshError) as e:
        Launch(**options)
    assert e.value.code == code


def test_one_node_rendezvous_listens_on_127_0_0_1_and_several_nodes_on_the_given_address():
    one = launch.config(Launch(2).record(), "/tmp/x")
    assert (one.rdzv_backend, one.rdzv_endpoint, one.nproc_per_node, one.max_restarts) == (
        rendezvous.BACKEND, "127.0.0.1:0", 2, 0)
    assert one.start_method == "forkserver"
    two = launch.config(Launch(4, nnodes=2, node_rank=1, rdzv="10.0.0.1:29500", timeout=30,
                                    trusted_network=True).record(), "/tmp/x")
    assert (two.rdzv_backend, two.rdzv_endpoint, two.min_nodes, two.max_nodes) == (
        rendezvous.BACKEND, "10.0.0.1:29500", 2, 2)
    assert two.rdzv_configs["rank"] == 1 and two.rdzv_configs["timeout"] >= 30
