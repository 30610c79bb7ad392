"""recipe.capture/build/state_tensors/load_state: an object rebuilt from its JSON recipe and its saved
tensors behaves like the original, bit for bit (forward, optimizer step, scheduler lr, loader batches)."""
import json
from types import SimpleNamespace

import pytest
import torch
from torch.utils.data import TensorDataset

from torchsh.data import transforms
from torchsh.data.loader import Loader
from torchsh.errors import TorchshError
from torchsh.recipes.base import record
from torchsh.session import recipe
from torchsh.table.signature import class_args
from torchsh.verbs import nn as nn_verbs, sched as sched_verbs

CTX = SimpleNamespace(device=None, registry=SimpleNamespace(get=lambda obj, kind: obj))  # objects as "handles"


def layer(cls, **values):
    return nn_verbs.construct(CTX, cls, values)


def scheduler(cls, **values):
    return sched_verbs._builder(cls, class_args(cls))(CTX, **values)


def rebuilt(objs, order):
    """objs {name: obj}; rebuild each in order through JSON text and safetensors bytes, as a session does
    (state_tensors gives the live values, not copies: a session writes them out at once)."""
    from safetensors.torch import load, save
    from torchsh.formats.stfile import own_storage
    recs = {n: json.loads(json.dumps(recipe.capture(objs[n], objs))) for n in order}
    states = {n: load(save(own_storage(recipe.state_tensors(objs[n], objs)))) for n in order}
    built = {}
    for n in order:
        built[n] = recipe.build(recs[n], built.__getitem__)
    for n in order:
        recipe.load_state(built[n], states[n])
    return built


def _seq():
    children = [layer(torch.nn.Linear, in_features=3, out_features=4), layer(torch.nn.BatchNorm1d, num_features=4),
                layer(torch.nn.ReLU), layer(torch.nn.Linear, in_features=4, out_features=2)]
    return record(torch.nn.Sequential(*children), "Sequential", {"modules": children})


def test_module_rebuilt_forwards_bit_for_bit_with_its_modes_dtype_and_frozen_parameters():
    torch.manual_seed(0)
    m = _seq()
    m(torch.randn(8, 3))          # BatchNorm running stats move
    m[1].eval()
    m[3].weight.requires_grad_(False)
    m.to(torch.float64)
    x = torch.randn(5, 3, dtype=torch.float64)
    new = rebuilt({"m": m}, ["m"])["m"]
    assert torch.equal(new(x), m(x))
    assert not new[1].training and new[0].training
    assert not new[3].weight.requires_grad and new[0].weight.requires_grad
    assert new[0].weight.dtype == torch.float64


def test_optimizer_step_after_rebuild_equals_the_original_step():
    torch.manual_seed(0)
    m = _seq()
    opt = torch.optim.Adam([{"params": m[0].parameters()}, {"params": m[3].parameters(), "lr": 0.1}], lr=0.01)
    x, y = torch.randn(8, 3), torch.randn(8, 2)

    def step(model, o):
        o.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        o.step()
    step(m, opt)
    step(m, opt)
    new = rebuilt({"m": m, "o": opt}, ["m", "o"])
    step(m, opt)
    step(new["m"], new["o"])
    for a, b in zip(m.parameters(), new["m"].parameters()):
        assert torch.equal(a, b)
    assert new["o"].param_groups[1]["lr"] == 0.1
    again = recipe.build(recipe.capture(opt, {"model": m}), {"model": new["m"]})   # lookup as a dict, too
    assert again.param_groups[0]["params"][0] is new["m"][0].weight


def test_scheduler_rebuilt_mid_schedule_continues_with_the_same_lrs():
    m = layer(torch.nn.Linear, in_features=2, out_features=1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    warm = scheduler(torch.optim.lr_scheduler.LinearLR, optimizer=opt, start_factor=0.5, total_iters=2)
    cos = scheduler(torch.optim.lr_scheduler.CosineAnnealingLR, optimizer=opt, T_max=5)
    seq = scheduler(torch.optim.lr_scheduler.SequentialLR, optimizer=opt, schedulers=[warm, cos], milestones=[2])
    for _ in range(3):
        opt.step()
        seq.step()
    new = rebuilt({"m": m, "o": opt, "w": warm, "c": cos, "s": seq}, ["m", "o", "w", "c", "s"])
    assert new["s"]._schedulers[0] is new["w"]   # shared objects stay shared
    for _ in range(3):
        opt.step(), seq.step(), new["o"].step(), new["s"].step()
        assert new["s"].get_last_lr() == seq.get_last_lr()
        assert new["o"].param_groups[0]["lr"] == opt.param_groups[0]["lr"]


def test_loader_resumes_mid_epoch_with_the_same_batches_and_its_dataset_chain():
    x, y = torch.randn(10, 3), torch.arange(10)
    base = TensorDataset(x, y)
    part = torch.utils.data.random_split(base, [0.8, 0.2], generator=torch.Generator().manual_seed(1))[0]
    step = transforms.Step("normalize", 0, ([0.5], [2.0]))
    data = transforms.TransformedDataset(part, [step])
    loader = Loader(data, batch_size=3, shuffle=True, seed=4)
    loader.next_batch()
    built = rebuilt({"x": x, "l": loader}, ["x", "l"])   # x is taken along: referenced, not copied
    new = built["l"]
    assert new.dataset.dataset.dataset.tensors[0] is built["x"]
    for _ in range(4):
        a, b = loader.next_batch(), new.next_batch()
        assert (a is None) == (b is None)
        if a is not None:
            assert all(torch.equal(p, q) for p, q in zip(a, b))


def test_tensor_comes_back_with_its_grad_as_a_leaf():
    t = torch.randn(3, requires_grad=True)
    (t * 2).sum().backward()
    u = t * 3
    new = rebuilt({"t": t, "u": u}, ["t", "u"])
    assert torch.equal(new["t"], t) and torch.equal(new["t"].grad, t.grad) and new["t"].requires_grad
    assert torch.equal(new["u"], u) and new["u"].grad_fn is None and not new["u"].requires_grad
    assert recipe.capture(u)["graph"] is True


def test_torchscript_module_is_not_portable():
    jit = torch.jit.script(torch.nn.Linear(2, 1))
    with pytest.raises(TorchshError) as e:
        recipe.capture(jit)
    assert e.value.code == "not_portable"


def test_optimizer_without_its_model_is_not_portable():
    m = layer(torch.nn.Linear, in_features=2, out_features=1)
    with pytest.raises(TorchshError) as e:
        recipe.capture(torch.optim.SGD(m.parameters(), lr=0.1))
    assert e.value.code == "not_portable"


def test_a_lazy_module_initialised_by_a_forward_comes_back_with_its_parameters():
    m = layer(torch.nn.LazyLinear, out_features=3)
    x = torch.randn(2, 5)
    m(x)
    new = rebuilt({"m": m}, ["m"])["m"]
    assert torch.equal(new(x), m(x))


def test_a_file_dataset_comes_back_over_the_same_file_with_its_in_memory_columns(tmp_path):
    import numpy as np
    from torchsh.data.datasets import FileDataset, NpyField, TensorField
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    d = FileDataset([NpyField("x", str(tmp_path / "x.npy")), TensorField("y", torch.tensor([3, 1, 4, 1]))])
    new = rebuilt({"d": d}, ["d"])["d"]
    assert all(torch.equal(a, b) for i in range(4) for a, b in zip(d[i], new[i]))
