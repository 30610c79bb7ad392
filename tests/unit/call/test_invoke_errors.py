"""invoke: exceptions PyTorch's own Python code raises on a caller's values are structured errors; the
same exception raised in torchsh's code stays a bug (internal_error at the edge, with a traceback)."""
from types import SimpleNamespace

import pytest
import torch

from torchsh.call.invoke import invoke
from torchsh.errors import TorchshError


def _run(call):
    op = SimpleNamespace(lockfree=True, name="probe", verb=True, call=call, usage_line=lambda overload: "probe")
    binding = SimpleNamespace(overload=SimpleNamespace(args=()), values={})
    ctx = SimpleNamespace(app=SimpleNamespace(memory=None), no_grad=False, inference_mode=False)
    return invoke(ctx, op, binding)


def test_an_attribute_error_inside_pytorch_is_a_torch_error_with_its_line():
    with pytest.raises(TorchshError) as caught:
        _run(lambda ctx: torch.distributions.Categorical(logits=5))  # PyTorch calls logits.dim()
    assert caught.value.code == "torch_error" and "has no attribute 'dim'" in caught.value.message


def test_an_attribute_error_in_torchshs_own_code_is_not_hidden():
    with pytest.raises(AttributeError):
        _run(lambda ctx: None.missing)
