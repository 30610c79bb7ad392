"""Modules and optimizers' state sized before they are built (memory/modules.py): a module on the meta device
(no memory, no random number drawn), an optimizer's state by one step of a meta twin, equal to what plain
PyTorch then allocates; and each face that builds them from words refused with out_of_memory."""
import types

import pytest
import torch

from torchsh import memory
from torchsh.errors import TorchshError
from torchsh.memory import modules

MiB, GiB = 1 << 20, 1 << 30


def held_bytes(module):
    return sum(t.numel() * t.element_size() for t in list(module.parameters()) + list(module.buffers()))


def test_a_module_is_sized_on_the_meta_device_as_plain_pytorch_then_holds():
    def build():
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.LSTM(8, 16, 2))
    assert modules.module_bytes(build) == held_bytes(build())
    assert modules.module_bytes(lambda: torch.nn.Linear(4, 10 ** 9)) == (4 * 10 ** 9 + 10 ** 9) * 4  # 18.6 GiB


def test_sizing_a_module_draws_no_random_number_so_the_real_build_has_plain_pytorchs_weights():
    class DrawsOnTheCpu(torch.nn.Module):  # a constructor that draws on a device of its own
        def __init__(self):
            super().__init__()
            self.noise = torch.nn.Parameter(torch.randn(5, device="cpu"))
            self.layer = torch.nn.Linear(3, 4)

    def build():
        return torch.nn.Sequential(torch.nn.Linear(4, 8), DrawsOnTheCpu(), torch.nn.Linear(8, 2))
    torch.manual_seed(7)
    expected = build().state_dict()
    torch.manual_seed(7)
    assert modules.module_bytes(build) > 0
    got = build().state_dict()
    assert all(torch.equal(got[k], expected[k]) for k in expected)


def test_what_a_build_is_given_counts_as_nothing_and_tied_weights_once():
    held = torch.nn.Linear(100, 100)
    assert modules.module_bytes(lambda: torch.nn.Sequential(held, torch.nn.Linear(2, 3))) == (2 * 3 + 3) * 4

    def tied():
        emb = torch.nn.Embedding(10, 4)
        head = torch.nn.Linear(4, 10, bias=False)
        head.weight = emb.weight
        return torch.nn.Sequential(emb, head)
    assert modules.module_bytes(tied) == 10 * 4 * 4


def test_a_build_that_fails_on_meta_is_not_sized():
    assert modules.module_bytes(lambda: torch.nn.Linear(-1, 2)) is None
    assert modules.module_bytes(lambda: 3) is None


def test_a_build_that_fails_after_making_tensors_counts_them_as_its_real_build_would_allocate_them_first():
    class Net(torch.nn.Module):
        def __init__(self, hidden, act):
            super().__init__()
            self.a = torch.nn.Linear(2, hidden)
            self.act = {"relu": torch.nn.ReLU()}[act]  # a KeyError after 11 GiB of weights
    assert modules.module_bytes(lambda: Net(10 ** 9, "bogus")) == (2 * 10 ** 9 + 10 ** 9) * 4
    # weight_hh's size overflows int64 after weight_ih (640 GB) was made
    assert modules.module_bytes(lambda: torch.nn.LSTM(4, 10 ** 10)) == 4 * 10 ** 10 * 4 * 4


def test_lazy_parameters_hold_nothing_yet():
    assert modules.module_bytes(lambda: torch.nn.LazyLinear(10 ** 12)) == 0
    memory.admit_module(context_with_room(0), lambda: torch.nn.LazyLinear(8), "LazyLinear")


def _stepped_state_bytes(optimizer, params):
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer.step(lambda: torch.zeros(())) if isinstance(optimizer, torch.optim.LBFGS) else optimizer.step()
    return sum(t.numel() * t.element_size() for s in optimizer.state.values() for t in s.values()
               if isinstance(t, torch.Tensor))


@pytest.mark.parametrize("name, options", [
    ("Adam", {}), ("AdamW", {"weight_decay": 0.1}), ("Adam", {"amsgrad": True}), ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adagrad", {}), ("RMSprop", {"centered": True, "momentum": 0.5}),
    ("Adafactor", {}), ("ASGD", {}), ("NAdam", {}), ("RAdam", {}), ("Rprop", {}), ("Adadelta", {}),
    ("Adamax", {})])
def test_an_optimizers_state_is_what_its_first_step_makes_in_plain_pytorch(name, options):
    model = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Linear(32, 32), torch.nn.Linear(32, 32),
                                torch.nn.LayerNorm(32))
    params = list(model.parameters())
    cls = getattr(torch.optim, name)
    estimated = modules.optimizer_state_bytes(cls, [{"params": params}], options, lambda p: True)
    assert estimated == _stepped_state_bytes(cls(params, **options), params)


def test_sparse_adams_state_is_sized_with_sparse_gradients():
    emb = torch.nn.Embedding(50, 8, sparse=True)
    estimated = modules.optimizer_state_bytes(torch.optim.SparseAdam, [{"params": [emb.weight]}], {},
                                              lambda p: True)
    optimizer = torch.optim.SparseAdam([emb.weight])
    emb(torch.tensor([1, 2, 3])).sum().backward()
    optimizer.step()
    state = [t for t in optimizer.state[emb.weight].values() if isinstance(t, torch.Tensor)]
    assert estimated == sum(t.numel() * t.element_size() for t in state) == 2 * 50 * 8 * 4


def test_lbfgs_counts_its_whole_history():
    params = list(torch.nn.Linear(10, 10).parameters())
    assert modules.optimizer_state_bytes(torch.optim.LBFGS, [{"params": params}], {"history_size": 7},
                                         lambda p: True) == (2 * 7 + 3) * 110 * 4


def test_two_groups_keep_their_own_options():
    a, b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    groups = [{"params": list(a.parameters())}, {"params": list(b.parameters()), "momentum": 0.9}]
    assert modules.optimizer_state_bytes(torch.optim.SGD, groups, {"lr": 0.1}, lambda p: True) == 20 * 4


# -- admission ------------------------------------------------------------------------------------------
def context_with_room(room):
    """A request context whose daemon's budget leaves `room` bytes over what this process holds now: read after a
    trim, as the budget trims before it refuses (a test process carrying others' freed memory would otherwise
    find more room at the refusal than here)."""
    memory.heap.malloc_trim()
    app = types.SimpleNamespace(memory=memory.Budget(memory.rss_bytes() + room, "test"))
    return types.SimpleNamespace(app=app, device=None)


def test_a_module_over_the_budget_is_refused_with_its_size_and_one_that_fits_is_admitted():
    ctx = context_with_room(100 * MiB)
    with pytest.raises(TorchshError, match=r"Linear's parameters and buffers of 18\.6 GiB would exceed") as e:
        memory.admit_module(ctx, lambda: torch.nn.Linear(4, 10 ** 9), "Linear")
    assert e.value.code == "out_of_memory" and ctx.app.memory.refused == 1
    memory.admit_module(ctx, lambda: torch.nn.Linear(100, 100), "Linear")
    memory.admit_module(types.SimpleNamespace(app=None), lambda: torch.nn.Linear(4, 10 ** 9), "Linear")  # no budget


def test_an_optimizers_state_is_refused_at_creation_and_at_its_first_step_once():
    params = list(torch.nn.Linear(1000, 1000).parameters())  # 4 MB: Adam's state 8 MB
    with pytest.raises(TorchshError, match=r"Adam's state of 7\.6 MiB"):
        memory.admit_optimizer(context_with_room(6 * MiB), torch.optim.Adam, [{"params": params}], {})
    memory.admit_optimizer(context_with_room(10 * MiB), torch.optim.Adam, [{"params": params}], {})
    optimizer = torch.optim.Adam(params)
    with pytest.raises(TorchshError, match=r"Adam's first step \(its state and the gradients\) of 11\.5 MiB"):
        memory.admit_first_step(context_with_room(10 * MiB), optimizer, backward=True)
    memory.admit_first_step(context_with_room(12 * MiB), optimizer, backward=True)
    memory.admit_first_step(context_with_room(0), optimizer, backward=True)  # admitted once: not checked again


def test_a_plain_step_counts_only_the_gradients_already_there():
    a, b = torch.nn.Linear(1000, 1000), torch.nn.Linear(1000, 1000)
    optimizer = torch.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.1, momentum=0.9)
    for p in a.parameters():
        p.grad = torch.zeros_like(p)
    with pytest.raises(TorchshError, match=r"of 3\.8 MiB"):  # a's momentum: b has no gradient to step
        memory.admit_first_step(context_with_room(3 * MiB), optimizer, backward=False)
