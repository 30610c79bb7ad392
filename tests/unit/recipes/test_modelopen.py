"""recipes/modelopen: what `model open torchvision:NAME` and `timm:NAME` ask of each library's registry, with
stand-in registries (this machine image's torchvision does not import with its CPU torch; the e2e tests in
tests/e2e/test_model_open.py run the real libraries where they import)."""
import os
import types

import pytest
import torch

from torchsh.errors import TorchshError
from torchsh.recipes import modelopen


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


def test_a_registry_model_is_captured_by_its_name_and_args_and_rebuilt_through_the_same_call(monkeypatch):
    from torchsh.session import recipe
    calls = []
    monkeypatch.setattr(modelopen, "import_vision", lambda library: _torchvision(calls))
    model = modelopen.open_model(None, "torchvision:resnet18", {"zero_init_residual": True}, 10)
    rebuilt = recipe.build(recipe.capture(model), {})
    assert type(rebuilt) is type(model) and rebuilt.out_features == 10
    assert calls[1] == calls[0] == ("resnet18", None, {"zero_init_residual": True, "num_classes": 10})


@pytest.mark.parametrize("change", [lambda p: os.chmod(p, 0o664), os.remove])
def test_a_users_file_changed_by_others_or_gone_is_not_run_again_by_a_rebuild(tmp_path, change):
    """A session's recipe names a file: rebuilding runs its code, so one others could write (or plant after
    it was removed) is refused before anything runs."""
    from torchsh.session import recipe
    path = tmp_path / "net.py"
    path.write_text("import torch\nclass Net(torch.nn.Linear):\n    def __init__(self):\n"
                    "        super().__init__(2, 1)\n")
    os.chmod(path, 0o644)
    caller = types.SimpleNamespace(path=lambda p: os.path.join(str(tmp_path), p))
    rec = recipe.capture(modelopen.open_model(caller, "net.py:Net"))
    change(path)
    with pytest.raises(TorchshError) as refused:
        recipe.build(rec, {})
    assert refused.value.code == "not_portable" and str(path) in refused.value.message
