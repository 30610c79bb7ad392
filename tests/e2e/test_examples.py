"""The examples are the README's main job: they run from bash and reach their targets."""
import os
import re

import pytest

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def example(name):
    return os.path.join(ROOT, "examples", name)


def test_regression_example_reaches_a_loss_below_1e_3_with_a_flat_object_count(sh):
    count = "torch tensors | wc -l"
    before = int(sh(count))
    out = sh("bash %s" % example("regression.sh"), timeout=600)
    final = float(re.search(r"final loss (\S+),", out).group(1))
    assert final < 1e-3
    assert out.count("  step ") >= 5  # progress lines
    w, b = (float(v) for v in re.search(r"weight (\S+), bias (\S+)", out).groups())
    assert abs(w - 2) < 0.05 and abs(b - 1) < 0.05
    # what the example keeps: x, y, the model, the optimizer and its two parameter handles; nothing per step
    assert int(sh(count)) == before + 6


def test_classifier_example_reaches_95_percent_and_reloads_in_a_fresh_daemon(sh):
    out = sh("bash %s" % example("classifier.sh"), timeout=600)
    acc = float(re.search(r"classifier: test accuracy (\S+)", out).group(1))
    again = float(re.search(r"reloaded checkpoint: test accuracy (\S+)", out).group(1))
    assert acc >= 0.95 and again == acc
    assert re.search(r"step 50  loss \S+  lr \S+  test accuracy", out)


def test_fit_example_resumes_in_a_fresh_daemon_and_reaches_95_percent(sh):
    out = sh("EPOCHS=3 bash %s" % example("fit.sh"), timeout=600)
    rows = re.findall(r"^(\d+)\s+\S+\s+\S+\s+\S+\s+(\S+)\s+0\.01\s", out, re.M)  # epoch rows: epoch … val_accuracy lr
    assert [int(e) for e, _ in rows] == [1, 2, 3]  # two before the cut, the third after the resume
    assert out.index("a fresh one resumes") < out.index("\n3 ")
    assert float(re.search(r"fit: validation accuracy (\S+)", out).group(1)) >= 0.95
    assert "val_loss:" in out  # the chart's legend


def test_predict_example_joins_its_predictions_back_to_the_csv_and_names_unlabeled_rows(sh):
    out = sh("bash %s" % example("predict.sh"), timeout=600)
    assert 'run.json keeps the classes: "classes":["setosa","versicolor","virginica"]' in out
    joined = re.findall(r"row (\d+): (\w+) \(is (\w+)\)", out)
    assert len(joined) == 5
    assert float(re.search(r"predict: validation accuracy (\S+) \(30 rows\)", out).group(1)) >= 0.9
    unlabeled = out.split("unlabeled rows, raw measurements\n")[1].split("\n")
    assert unlabeled[0] == "row\tprediction"
    assert [line.split("\t")[1] for line in unlabeled[1:4]] == ["setosa", "versicolor", "virginica"]


def test_images_example_predicts_each_file_by_its_path(sh):
    out = sh("bash %s" % example("images.sh"), timeout=600)
    assert "classes  bright dark" in out
    files = re.findall(r"^pictures/(\w+)/\d+\.ppm,(\w+)$", out, re.M)
    assert len(files) == 3 and all(kind in ("bright", "dark") for kind, _ in files)
    assert float(re.search(r"images: validation accuracy (\S+) \(10 images\)", out).group(1)) >= 0.9
