"""classes/modelopen: what `model open torchvision:NAME` and `timm:NAME` ask of each library's registry, with
stand-in registries (this machine image's torchvision does not import with its CPU torch; the e2e tests in
tests/e2e/test_model_open.py run the real libraries where they import)."""
import types

import pytest
import torch

from torchsh.classes import modelopen
from torchsh.errors import TorchshError


def _torchvision(calls):
    def get_model(name, weights="default", **args):
        calls.append((name, weights, args))
        return torch.nn.Linear(2, args.get("num_classes", 1))
    return types.SimpleNamespace(models=types.SimpleNamespace(list_models=lambda: ["resnet18", "resnet34", "vgg11"],
                                                               get_model=get_model))


def _timm(calls):
    def create_model(name, pretrained=True, **args):
        calls.append((name, pretrained, args))
        return torch.nn.Linear(2, 3)
    return types.SimpleNamespace(list_models=lambda: ["resnet18", "efficientnet_b0"],
                                 is_model=lambda name: name.split(".")[0] in ("resnet18", "efficientnet_b0"),
                                 create_model=create_model)


def test_the_architecture_comes_without_weights_with_the_args_given(monkeypatch):
    calls = []
    monkeypatch.setattr(modelopen, "import_vision", lambda library: _torchvision(calls)
                        if library == "torchvision" else _timm(calls))
    assert modelopen.open_model(None, "torchvision:resnet18", {"zero_init_residual": True}, 10).out_features == 10
    modelopen.open_model(None, "timm:resnet18.a1_in1k", None, 5)
    assert calls == [("resnet18", None, {"zero_init_residual": True, "num_classes": 10}),
                     ("resnet18.a1_in1k", False, {"num_classes": 5})]


@pytest.mark.parametrize("source,hint", [("torchvision:resnet81", "did you mean resnet18"),
                                         ("timm:efficientnet_b9", "did you mean efficientnet_b0"),
                                         ("torchvision:swin_t", "print(torchvision.models.list_models())")])
def test_an_unknown_name_is_refused_with_the_registrys_nearest(monkeypatch, source, hint):
    monkeypatch.setattr(modelopen, "import_vision", lambda library: _torchvision([])
                        if library == "torchvision" else _timm([]))
    with pytest.raises(TorchshError) as refused:
        modelopen.open_model(None, source)
    assert refused.value.code == "bad_argument" and hint in refused.value.hint
