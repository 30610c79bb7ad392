"""snapshot: a session's stream is written from the live tensors (no second copy of every value in memory);
values that share a storage (a held view of a held tensor, tied weights) still save, and load equal."""
import torch

from torchsh.registry.store import Registry
from torchsh.recipes.base import record
from torchsh.session import snapshot, transfer
from torchsh.verbs import nn as nn_verbs
from test_recipe import CTX


def test_a_held_tensors_value_and_grad_are_the_tensors_themselves_not_copies():
    registry = Registry()
    t = torch.randn(1000, requires_grad=True)
    t.grad = torch.ones(1000)
    h = registry.put(t, "tensor")
    _, tensors = snapshot.collect(registry)
    assert tensors["%s|value" % h].data_ptr() == t.data_ptr()
    assert tensors["%s|grad" % h].data_ptr() == t.grad.data_ptr()


def test_a_held_view_and_tied_weights_save_and_come_back_equal(tmp_path):
    registry = Registry()
    base = torch.randn(4, 3)
    h_base, h_row = registry.put(base, "tensor"), registry.put(base[1], "tensor")  # one storage
    children = [nn_verbs.construct(CTX, torch.nn.Linear, {"in_features": 3, "out_features": 3}) for _ in range(2)]
    model = record(torch.nn.Sequential(*children), "Sequential", {"modules": children})
    model[1].weight = model[0].weight  # tied
    h_model = registry.put(model, "nn")
    transfer.save_folder(registry, str(tmp_path))
    fresh = Registry()
    transfer.hold(fresh, transfer.read_folder(str(tmp_path)), True)
    assert torch.equal(fresh.get(h_base, "tensor"), base) and torch.equal(fresh.get(h_row, "tensor"), base[1])
    back = fresh.get(h_model, "nn")
    assert torch.equal(back[0].weight, model[0].weight) and torch.equal(back[1].weight, model[0].weight)
    assert torch.equal(back[1].bias, model[1].bias)


def test_conjugate_and_negative_views_save_as_their_values(tmp_path):
    registry = Registry()
    z = torch.randn(3, dtype=torch.complex64)
    h_conj, h_neg = registry.put(z.conj(), "tensor"), registry.put(torch.randn(3)._neg_view(), "tensor")
    want = {h: registry.get(h, "tensor").resolve_conj().resolve_neg() for h in (h_conj, h_neg)}
    transfer.save_folder(registry, str(tmp_path))
    fresh = Registry()
    transfer.hold(fresh, transfer.read_folder(str(tmp_path)), True)
    assert all(torch.equal(fresh.get(h, "tensor"), v) for h, v in want.items())
