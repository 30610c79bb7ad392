"""`torch model export` of a model `torch fit` trained on standardized data (issue 36, one model, one meaning):
the exported graph takes the raw rows `torch predict` takes, the card's standardization baked in front of
the model; its input is named after the card's field, its output "output", and the file's metadata carries
the columns and classes. --raw exports the bare model and says on stderr what its inputs need first.
The oracle is `torch predict` on the same raw rows, and plain PyTorch's arithmetic on the card's statistics."""
import csv
import json
import os
from types import SimpleNamespace

import onnxruntime
import pytest
import torch
from sklearn.datasets import load_iris

COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
NAMES = ["setosa", "versicolor", "virginica"]
FIT = ("torch manual_seed 0; m=$(torch nn sequential 'linear 4 16' relu 'linear 16 3'); "
       "T=$(torch data transform $(torch data open {table} --target species) --standardize); "
       "torch fit $m $(torch optim adam $m --lr 0.05) $(torch data loader $T --batch_size 16 --shuffle --seed 0) "
       "--loss cross_entropy --epochs 5 >/dev/null 2>&1; echo $m")
pytestmark = pytest.mark.slow  # a fit and four exports, 5 s or more each on 2 cores
ONNX_TOLERANCE = 1e-5  # onnxruntime's float32 matmuls against PyTorch's: measured 1.9e-06 over the 150 rows (logits to ±20)


def _write(path, header, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


@pytest.fixture(scope="module")
def iris(sh):
    """The model fit on standardized iris, the 150 raw rows, and what `torch predict` makes of them: the
    classes and probabilities over the unlabeled table, the logits over the rows as a tensor."""
    data = load_iris()
    table, unlabeled, one_row = sh.tmp("iris.csv"), sh.tmp("rows.csv"), sh.tmp("one_row.csv")
    _write(table, COLUMNS + ["species"], [["%g" % v for v in row] + [data.target_names[label]]
                                          for row, label in zip(data.data, data.target)])
    _write(unlabeled, COLUMNS, [["%g" % v for v in row] for row in data.data])
    _write(one_row, COLUMNS, [["5.1", "3.5", "1.4", "0.2"]])
    m, rows = sh(FIT.format(table=table)), torch.tensor(data.data, dtype=torch.float32)
    predicted = json.loads(sh("torch predict %s $(torch data open %s) --proba --json" % (m, unlabeled)))
    return SimpleNamespace(model=m, rows=rows, card=json.loads(sh("torch model card %s --json" % m)),
                           one_row=json.loads(sh("torch predict %s $(torch data open %s) --json" % (m, one_row))),
                           classes=[r["prediction"] for r in predicted],
                           proba=torch.tensor([[r[name] for name in NAMES] for r in predicted]),
                           logits=sh.fetch(sh("torch predict %s %s" % (m, sh.put(rows)))))


def _onnx(path):
    return onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])


def test_the_onnx_takes_raw_rows_and_decides_every_row_as_predict_does(sh, iris):
    path = sh.tmp("iris.onnx")
    mode = json.loads(sh("torch nn info %s --json" % iris.model))["mode"]
    out = sh("torch model export %s %s --example 1,4 --dynamic 0" % (iris.model, path))
    assert "  standardize baked in  max |Δ| = " in out and out.endswith("(onnxruntime)")
    assert json.loads(sh("torch nn info %s --json" % iris.model))["mode"] == mode
    session = _onnx(path)
    assert [i.name for i in session.get_inputs()] == ["features"] == [f["name"] for f in iris.card["inputs"]]
    assert [o.name for o in session.get_outputs()] == ["output"]
    meta = session.get_modelmeta().custom_metadata_map
    assert (json.loads(meta["columns"]), json.loads(meta["classes"])) == (COLUMNS, NAMES)
    assert (json.loads(meta["baked"]), meta["task"], meta["decision"]) == (["standardize"], "multiclass", "argmax")
    row = session.run(None, {"features": torch.tensor([[5.1, 3.5, 1.4, 0.2]]).numpy()})[0]
    assert iris.one_row == [{"row": 0, "prediction": "setosa"}] and NAMES[row.argmax()] == "setosa"
    got = torch.from_numpy(session.run(None, {"features": iris.rows.numpy()})[0])
    assert [NAMES[k] for k in got.argmax(1)] == iris.classes
    assert (got - iris.logits).abs().max().item() <= ONNX_TOLERANCE
    assert (got.softmax(1) - iris.proba).abs().max().item() <= 1e-6


def test_the_pt2_takes_raw_rows_and_gives_predict_s_logits_bit_for_bit(sh, iris):
    path = sh.tmp("iris.pt2")
    got = json.loads(sh("torch model export %s %s --example 1,4 --dynamic 0 --json" % (iris.model, path)))
    assert got["baked"] == ["standardize"] and got["max_abs_diff"] == 0.0
    extra = {"metadata.json": ""}
    program = torch.export.load(path, extra_files=extra)
    meta = json.loads(extra["metadata.json"])
    assert (meta["columns"], meta["classes"], meta["baked"]) == (COLUMNS, NAMES, ["standardize"])
    assert program.graph_signature.user_inputs == ("features",)
    assert sorted(program.state_dict) == ["model.0.bias", "model.0.weight", "model.2.bias", "model.2.weight"]
    with torch.no_grad():
        logits = program.module()(iris.rows)
        assert NAMES[program.module()(torch.tensor([[5.1, 3.5, 1.4, 0.2]])).argmax()] == "setosa"
    assert torch.equal(logits, iris.logits)
    assert [NAMES[k] for k in logits.argmax(1)] == iris.classes
    assert sh("torch nn load $(torch nn sequential 'linear 4 16' relu 'linear 16 3') %s --strip model." % path) \
        == "loaded 4 of 4 keys from %s" % path


def _standardized(rows, card):
    """The rows standardized with the card's statistics, in plain PyTorch: float64, then float32."""
    step = card["preprocessing"][0]
    mean, std = torch.tensor(step["mean"], dtype=torch.float64), torch.tensor(step["std"], dtype=torch.float64)
    return ((rows.double() - mean) / std).float()


def test_raw_exports_the_bare_model_and_stderr_names_the_statistics_its_inputs_need(sh, iris):
    onnx, pt2 = sh.tmp("raw.onnx"), sh.tmp("raw.pt2")
    for path in (onnx, pt2):
        r = sh.run("torch model export %s %s --example 1,4 --dynamic 0 --raw" % (iris.model, path))
        assert r.code == 0 and "baked" not in r.out and r.err.count("\n") == 1
        assert r.err.startswith("torch: model export: warning: --raw: %s expects inputs already standardized: "
                                "(x - mean) / std with mean [5.843 3.057 3.758 1.199], std [0.8253 0.4344 1.759 "
                                "0.7597]" % os.path.basename(path)), r.err
    standardized = _standardized(iris.rows, iris.card)
    session = _onnx(onnx)
    got = torch.from_numpy(session.run(None, {session.get_inputs()[0].name: standardized.numpy()})[0])
    assert (got - iris.logits).abs().max().item() <= ONNX_TOLERANCE
    program = torch.export.load(pt2)
    assert sorted(program.state_dict) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    with torch.no_grad():
        assert torch.equal(program.module()(standardized), iris.logits)
        assert not torch.allclose(program.module()(iris.rows), iris.logits, atol=1e-2)  # raw rows: another answer


def test_an_example_of_other_items_than_the_card_s_is_refused_with_the_shape_to_give(sh, iris):
    path = sh.tmp("wide.onnx")
    r = sh.run("torch model export %s %s --example 1,5" % (iris.model, path))
    assert (r.code, r.out, r.err.count("\n")) == (4, "", 1)
    assert "standardizes items of shape [4], and the example's are [5]" in r.err and "--example 1,4" in r.err
    assert r.err.rstrip().endswith("[shape_mismatch]") and not os.path.exists(path)
