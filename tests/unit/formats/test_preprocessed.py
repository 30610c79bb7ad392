"""preprocessed: a card's preprocessing baked in front of the model for `model export`. The baked standardization
gives what data/standardize.py gives (predict's arithmetic) bit for bit, run by torch.export and by
onnxruntime; a kind the graph cannot hold, or a step on another input field, is refused with --raw as the way
out and nothing written; the model's mode is the one it had."""
import os
import warnings

import onnxruntime
import pytest
import torch

from torchsh.contract import card as cards
from torchsh.data.standardize import standardize
from torchsh.errors import TorchshError
from torchsh.models import export

MEAN, STD = [1e3 / 3, -0.1, 7.0, 2e-3], [0.3, 1.7, 1e-3, 3.0]


def _carded(model, **card):
    """The model with CARD kept as torch fit keeps it, but unchecked: a hand-made card, or a newer torchsh's."""
    card.setdefault("inputs", [{"name": "features", "shape": [4], "dtype": "float32"}])
    object.__setattr__(model, cards.ATTRIBUTE, card)
    return model


def _standardizing(model=None, field=0):
    return _carded(model or torch.nn.Identity(), preprocessing=[dict(kind="standardize", field=field, mean=MEAN,
                                                                     std=STD)])


@pytest.mark.slow  # two exports, the ONNX one ~5 s on 2 cores
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_the_baked_standardization_is_data_standardize_s_bit_for_bit_in_torch_export_and_onnxruntime(tmp_path, dtype):
    rows = (torch.randn(500, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
            * torch.tensor(STD) * 40 + torch.tensor(MEAN)).to(dtype)
    want = standardize(rows, MEAN, STD, batch=True)  # what predict feeds the model (contract/encode.batch)
    onnx, pt2 = str(tmp_path / "s.onnx"), str(tmp_path / "s.pt2")
    for path in (onnx, pt2):
        assert export.export(_standardizing(), path, rows[:1], dynamic=[0])["baked"] == ["standardize"]
    with torch.no_grad():
        assert torch.equal(torch.export.load(pt2).module()(rows), want)
    session = onnxruntime.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    got = torch.from_numpy(session.run(None, {"features": rows.numpy()})[0])
    assert got.dtype == want.dtype and torch.equal(got, want)


@pytest.mark.parametrize("name", ["m.onnx", "m.pt2"])
def test_a_preprocessing_kind_the_graph_cannot_hold_is_refused_naming_it_and_raw(tmp_path, name):
    model = _carded(torch.nn.Linear(4, 2), preprocessing=[dict(kind="one_hot", field=0, columns=["color"])])
    with pytest.raises(TorchshError) as err:
        export.export(model, str(tmp_path / name), [1, 4])
    assert err.value.code == "not_supported" and "preprocesses its inputs with one_hot" in err.value.message
    assert "it holds standardize" in err.value.message and err.value.hint.startswith("--raw exports the bare model")
    assert os.listdir(tmp_path) == []


def test_with_raw_a_kind_the_graph_cannot_hold_exports_the_bare_model_and_warns(tmp_path):
    model = _carded(torch.nn.Linear(4, 2), preprocessing=[dict(kind="one_hot", field=0, columns=["color"])])
    with pytest.warns(UserWarning, match=r"^--raw: m\.pt2 expects inputs already through one_hot, as its card says"):
        got = export.export(model, str(tmp_path / "m.pt2"), [1, 4], dynamic=[0], raw=True)
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert got["baked"] == [] and torch.equal(torch.export.load(str(tmp_path / "m.pt2")).module()(x), model(x))


def test_a_step_on_another_input_field_than_the_traced_one_is_refused(tmp_path):
    with pytest.raises(TorchshError) as err:
        export.export(_standardizing(field=1), str(tmp_path / "m.pt2"), [1, 4])
    assert err.value.code == "not_supported" and "preprocesses input field 1" in err.value.message
    assert "--raw" in err.value.hint and os.listdir(tmp_path) == []


@pytest.mark.parametrize("training", [True, False])
def test_the_model_keeps_its_mode_and_its_card_without_a_step_still_names_the_graph(tmp_path, training):
    model = _carded(torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Dropout(0.5)), classes=["a", "b"])
    model.train(training)
    path = str(tmp_path / "m.pt2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a card without preprocessing: nothing to say
        assert export.export(model, path, [1, 4], dynamic=[0])["baked"] == []
    assert model.training is training
    extra = {"metadata.json": ""}
    program = torch.export.load(path, extra_files=extra)
    assert program.graph_signature.user_inputs == ("features",) and '"classes": ["a", "b"]' in extra["metadata.json"]
    x = torch.randn(5, 4)
    with torch.no_grad():
        assert torch.equal(program.module()(x), model.eval()(x))  # dropout off: exported in eval mode
