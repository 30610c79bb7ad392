"""zero_grad and requires_grad on modules and optimizers held in the registry.

The verbs are generic over torch.nn.Module and torch.optim.Optimizer, so most of this calls the
handlers in-process on a real Registry (no shell verb is needed to make a module); the last tests
go through bash with `torch nn linear` and `torch optim sgd`.
"""
from types import SimpleNamespace

import pytest
import torch

from torchsh.errors import TorchshError
from torchsh.registry.store import Registry
from torchsh.verbs import autograd


def _ctx():
    return SimpleNamespace(registry=Registry())


def _trained(model):
    model(torch.ones(2, model.in_features)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    return model


def test_zero_grad_of_a_module_sets_grads_to_none_by_default_like_pytorch():
    ctx = _ctx()
    model = _trained(torch.nn.Linear(3, 2))
    autograd.zero_grad(ctx, [ctx.registry.put(model, "nn")])
    assert all(p.grad is None for p in model.parameters())


def test_zero_grad_of_a_module_with_set_to_none_false_leaves_zeros():
    ctx = _ctx()
    model = _trained(torch.nn.Linear(3, 2))
    autograd.zero_grad(ctx, [ctx.registry.put(model, "nn")], set_to_none=False)
    assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in model.parameters())


def test_zero_grad_of_an_optimizer_follows_its_set_to_none_default():
    ctx = _ctx()
    model = _trained(torch.nn.Linear(3, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    autograd.zero_grad(ctx, [ctx.registry.put(opt, "optim")])
    assert all(p.grad is None for p in model.parameters())
    _trained(model)
    autograd.zero_grad(ctx, [ctx.registry.put(opt, "optim")], set_to_none=False)
    assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in model.parameters())


def test_zero_grad_mixes_tensors_modules_and_optimizers_in_one_call():
    ctx = _ctx()
    a, b = _trained(torch.nn.Linear(2, 1)), _trained(torch.nn.Linear(2, 1))
    w = torch.ones(2, requires_grad=True)
    (w * 3).sum().backward()
    opt = torch.optim.Adam(b.parameters())
    autograd.zero_grad(ctx, [ctx.registry.put(w), ctx.registry.put(a, "nn"), ctx.registry.put(opt, "optim")])
    assert torch.equal(w.grad, torch.zeros(2))  # a tensor's gradient reads as zeros
    assert all(p.grad is None for p in a.parameters()) and all(p.grad is None for p in b.parameters())


def test_zero_grad_refuses_a_scheduler_and_changes_nothing():
    ctx = _ctx()
    model = _trained(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    with pytest.raises(TorchshError) as e:
        autograd.zero_grad(ctx, [ctx.registry.put(model, "nn"), ctx.registry.put(sched, "sched")])
    assert e.value.code == "wrong_kind"
    assert all(p.grad is not None for p in model.parameters())


def test_zero_grad_detaches_a_create_graph_gradient_like_the_optimizer_does():
    ctx = _ctx()
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w ** 3).sum().backward(create_graph=True)
    assert w.grad.grad_fn is not None
    autograd.zero_grad(ctx, [ctx.registry.put(w)])
    assert w.grad.grad_fn is None and torch.equal(w.grad, torch.zeros(2))


def test_requires_grad_false_freezes_every_parameter_of_a_module():
    ctx = _ctx()
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 1))
    h = ctx.registry.put(model, "nn")
    assert autograd.requires_grad(ctx, h) is True
    autograd.requires_grad(ctx, h, False)
    assert autograd.requires_grad(ctx, h) is False
    assert not model(torch.ones(1, 3)).requires_grad  # frozen: nothing to back-propagate into
    model[1].requires_grad_(True)
    assert autograd.requires_grad(ctx, h) == {"0.weight": False, "0.bias": False, "1.weight": True, "1.bias": True}
    model(torch.ones(1, 3)).sum().backward()
    assert model[0].weight.grad is None and model[1].weight.grad is not None


def test_requires_grad_refuses_an_optimizer():
    ctx = _ctx()
    opt = torch.optim.SGD([torch.ones(1, requires_grad=True)], lr=1)
    with pytest.raises(TorchshError) as e:
        autograd.requires_grad(ctx, ctx.registry.put(opt, "optim"))
    assert e.value.code == "wrong_kind"


def test_zero_grad_and_requires_grad_on_a_module_through_bash(sh):
    out = sh("m=$(torch nn linear 3 1); x=$(torch ones '[2,3]'); "
             "torch forward $m $x | torch sum | torch backward; torch requires_grad $m; "
             "torch requires_grad $m false; torch requires_grad $m; torch zero_grad $m; "
             "torch requires_grad $m true; torch requires_grad $m")
    assert out.split() == ["true", "false", "true"]


def test_zero_grad_of_an_optimizer_through_bash_leaves_no_gradient(sh):
    r = sh.run("w=$(torch tensor '[1.0, 2.0]' --requires_grad); o=$(torch optim sgd $w --lr 0.5); "
               "torch mul $w $w | torch sum | torch backward; torch zero_grad $o; torch grad $w")
    assert r.code == 4 and "no gradient yet" in r.err  # PyTorch 2.x: optimizer zero_grad sets None


def test_detach_shares_storage_so_an_optimizer_step_shows_through_it(sh):
    out = sh("w=$(torch tensor '[1.0, 2.0]' --requires_grad); d=$(torch detach $w); c=$(torch clone $d); "
             "o=$(torch optim sgd $w --lr 0.25); torch mul $w $w | torch sum | torch backward; torch step $o; "
             "torch value $w; torch value $d; torch value $c")
    assert out.split() == ["[0.5,1.0]", "[0.5,1.0]", "[1.0,2.0]"]  # w - 0.25 * 2w; the clone is independent
