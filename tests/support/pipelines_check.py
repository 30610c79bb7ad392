"""One pipeline of pipelines.py (beside this file) through the shell (its bash script against the test daemon) and through plain
PyTorch (pipelines_oracle.py), compared: the final weights bit for bit, every epoch's figures within 1e-5,
predict's predictions equal for every row (probabilities within 1e-6), evaluate equal to the last epoch's val row,
the model's card saying what the pipeline means (task, decision, classes, shapes, the standardization's numbers),
the ONNX file (onnxruntime) deciding as predict and its outputs within 1e-5, and serve, sent the raw rows, answering
PyTorch's outputs and predict's class names. A failure names the pipeline and prints it as a script to rerun
(pipelines.rerun)."""
import json
import os

import numpy as np
import torch
from support.required import require_tool
from safetensors.torch import load_file

from support import pipelines
from support import pipelines_oracle as oracle

FIGURES = 1e-5   # an epoch's loss and metrics: summed in another order than scikit-learn's
PROBABILITY = 1e-6


def check(sh, seed):
    """Run pipeline SEED through the shell and the oracle; AssertionError (with the script to rerun) on any
    difference."""
    require_tool("curl", "apt-get install curl")  # the serve leg's V2 request over the daemon's socket
    p = pipelines.draw(seed)
    folder = sh.tmp("pipeline-%d" % seed)
    os.makedirs(folder)
    d = pipelines.write_data(p, folder)
    r = sh.run(pipelines.script(p), cwd=folder, timeout=300)
    assert r.code == 0, "the script failed (exit %d)\n--- stderr\n%s\n--- the pipeline\n%s" % (
        r.code, r.err, pipelines.rerun(p, folder))
    try:
        compare(p, d, folder)
    except AssertionError as e:
        raise AssertionError("%s\n--- the pipeline\n%s" % (e, pipelines.rerun(p, folder))) from None


def compare(p, d, folder):
    """What the script left in FOLDER against the oracle's run of pipeline P on data D."""
    def read(name):
        with open(os.path.join(folder, name)) as f:
            return f.read()
    outcome = oracle.run(p, d, load_file(os.path.join(folder, "init.safetensors")))
    rows = [json.loads(line) for line in read("fit.jsonl").splitlines()]
    _rows_agree(p, rows, outcome.rows)
    final = load_file(os.path.join(folder, "final.safetensors"))
    assert final.keys() == outcome.state.keys()
    for key, value in outcome.state.items():
        assert torch.equal(final[key], value), "weight %s differs from PyTorch's: max |Δ| %g" % (
            key, (final[key] - value).abs().max())
    _card_agrees(p, json.loads(read("card.json")), outcome)
    predicted = json.loads(read("predict.json"))
    _predictions_agree(p, predicted, outcome)
    last, scores = rows[-1], json.loads(read("evaluate.json"))
    assert scores == dict(loss=last["val_loss"], **{m: last["val_" + m] for m in p.metrics}), \
        "evaluate %s, the last epoch's val row %s" % (scores, last)
    if p.export:
        _onnx_agrees(p, d, os.path.join(folder, "m.onnx"), outcome, predicted)
    _served_agrees(p, json.loads(read("served.json")), outcome, predicted)


def _rows_agree(p, got, want):
    assert len(got) == p.epochs, "%d rows for %d epochs" % (len(got), p.epochs)
    for epoch, (row, expected) in enumerate(zip(got, want), 1):
        assert set(row) == set(expected) | {"epoch", "lr", "seconds"}, (row, expected)
        for key, value in expected.items():
            if isinstance(value, list):  # a confusion matrix: counts
                assert row[key] == value, "epoch %d %s: %s, PyTorch's %s" % (epoch, key, row[key], value)
            else:
                assert abs(row[key] - value) <= FIGURES, "epoch %d %s: %r, PyTorch's %r" % (epoch, key, row[key], value)


def _card_agrees(p, card, outcome):
    """The card says what the pipeline means: its task and decision, classes, shapes, the standardization's numbers."""
    output = [] if p.flatten else [p.width]
    viewed = p.task != "multiclass" and list(p.target_shape) != output
    named = p.task == "binary" or p.target == "names"  # a binary model's classes are "0" and "1" when unnamed
    want = {"task": p.task, "decision": {"multiclass": "argmax", "binary": "logit>0", "regression": "identity"}[p.task],
            "classes": outcome.classes if named else None, "loss": p.loss, "output": {"shape": output},
            "target": {"name": "y", "shape": output if viewed else list(p.target_shape),
                       "dtype": "int64" if p.task == "multiclass" else "float32"}}
    got = {k: card.get(k) for k in want}
    assert got == want, "the card says %s, the pipeline means %s" % (got, want)
    (field,) = card["inputs"]
    columns = ["f%d" % k for k in range(p.features)] if p.fmt == "csv" else None
    assert (field["shape"], field["dtype"], field.get("columns")) == ([p.features], "float32", columns), field
    steps = card.get("preprocessing") or []
    if outcome.statistics is None:
        assert not steps, "the card standardizes: %s" % steps
        return
    mean, std = (s.tolist() for s in outcome.statistics)
    assert steps == [{"kind": "standardize", "field": 0, "mean": mean, "std": std}], "the card's statistics: %s" % steps


def _predictions_agree(p, rows, outcome):
    assert [r["row"] for r in rows] == outcome.test, "predict's rows are not the test rows in order"
    if p.task == "regression":
        columns = ["prediction"] if p.width == 1 else ["output_%d" % j for j in range(p.width)]
        assert all(list(r) == ["row"] + columns for r in rows), "predict's columns: %s" % list(rows[0])
        got = np.float32([[r[c] for c in columns] for r in rows])
        assert np.array_equal(got, np.float32(outcome.decided)), "predictions differ from PyTorch's: max |Δ| %g" % (
            np.abs(got - np.float32(outcome.decided)).max())
        return
    wrong = [(r["row"], r["prediction"], w) for r, w in zip(rows, outcome.decided) if r["prediction"] != w]
    assert not wrong, "predict's (row, prediction, PyTorch's): %s" % wrong[:5]
    columns = ["row", "prediction"] + (outcome.classes if p.proba else [])
    assert all(list(r) == columns for r in rows), "predict's columns %s, not %s" % (list(rows[0]), columns)
    if p.proba:
        got = torch.tensor([[r[n] for n in outcome.classes] for r in rows], dtype=torch.float64)
        delta = (got - torch.tensor(outcome.proba, dtype=torch.float64)).abs().max().item()
        assert delta <= PROBABILITY, "probabilities differ from PyTorch's by %g" % delta


def _onnx_agrees(p, d, path, outcome, rows):
    import onnxruntime
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (output,) = session.run(None, {session.get_inputs()[0].name: d.x})
    output = torch.from_numpy(output)
    assert output.shape == outcome.output.shape, (output.shape, outcome.output.shape)
    delta = (output.double() - outcome.output.double()).abs().max().item()
    assert delta <= FIGURES, "the ONNX model's outputs differ from PyTorch's by %g" % delta
    _decides_as_predict(p, output, outcome, rows, "the ONNX model")


def _decides_as_predict(p, output, outcome, rows, who):
    """OUTPUT (one row per row of the file) decides every row predict read as predict did."""
    at = output[outcome.test]
    if p.task == "regression":
        got = at.reshape(len(at), -1).double()
        delta = (got - torch.tensor([[r[c] for c in r if c != "row"] for r in rows], dtype=torch.float64)).abs().max()
        assert delta.item() <= FIGURES, "%s's values differ from predict's by %g" % (who, delta)
        return
    decided = [outcome.classes[k] for k in oracle.decisions(p, at).tolist()]
    wrong = [(r["row"], r["prediction"], name) for r, name in zip(rows, decided) if r["prediction"] != name]
    assert not wrong, "%s decides otherwise than predict (row, predict's, its): %s" % (who, wrong[:5])


def _served_agrees(p, reply, outcome, rows):
    """serve takes the raw rows predict takes (its card standardizes them), answers the model's output, and for a
    classifier a `prediction` output of class names, each as predict decided it."""
    outputs = {o["name"]: o for o in reply.get("outputs", [])}
    assert "output__0" in outputs, "serve answered %s" % str(reply)[:300]
    served = torch.tensor(outputs["output__0"]["data"], dtype=torch.float32).reshape(outcome.output.shape)
    delta = (served.double() - outcome.output.double()).abs().max().item()
    assert delta <= PROBABILITY, "serve's outputs differ from PyTorch's by %g" % delta
    _decides_as_predict(p, served, outcome, rows, "serve")
    named = outputs.get("prediction", {}).get("data")
    if p.task == "regression":
        assert named is None, "serve decided classes for a regression: %s" % str(named)[:200]
        return
    assert named is not None and [named[i] for i in outcome.test] == [r["prediction"] for r in rows], \
        "serve's `prediction` output: %s" % str(named)[:200]
