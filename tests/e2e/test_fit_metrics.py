"""`torch fit --metrics` past accuracy: precision, recall, f1, f1_micro and confusion for classes, mae, rmse
and r2 for regression, each equal to scikit-learn's on the same predictions over the whole validation set
(batches of unequal sizes, so a mean of per-batch figures would differ)."""
import json
import os

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file
from sklearn import metrics as sk

X = torch.randn(60, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 5, (60,), generator=torch.Generator().manual_seed(2))
VX = torch.randn(23, 4, generator=torch.Generator().manual_seed(3))
# class 4 is never a validation target: its recall is 0/0 wherever the model predicts it (zero_division)
VY = torch.randint(0, 4, (23,), generator=torch.Generator().manual_seed(4))
REGRESSION_X = torch.randn(50, 3, generator=torch.Generator().manual_seed(5))
REGRESSION_Y = REGRESSION_X @ torch.tensor([[1.0, -2.0], [0.5, 0.0], [0.0, 3.0]]) + 0.3


def fit_and_read(sh, model, flags, x, y, vx, vy):
    """Fit with --val and --log; return the last epoch row of metrics.jsonl and the weights it ended with."""
    folder, weights = sh.tmp("run"), sh.tmp("weights.safetensors")
    sh("m=$(torch nn sequential %s); o=$(torch optim sgd $m --lr 0.05); "
       "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8 --shuffle --seed 11); "
       "V=$(torch data loader $(torch data tensors %s %s) --batch_size 7); "
       "torch fit $m $o $L --val $V --epochs 2 --log %s %s >/dev/null; torch nn save $m %s"
       % (model, sh.put(x), sh.put(y), sh.put(vx), sh.put(vy), folder, flags, weights))
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    return [r for r in rows if r["kind"] == "epoch"][-1], load_file(weights)


def linear(weights, inputs, outputs):
    net = torch.nn.Sequential(torch.nn.Linear(inputs, outputs))
    net.load_state_dict(weights)
    return net.eval()


def sklearn_classification(weights):
    """scikit-learn's figures on the validation predictions of the fitted 'linear 4 5' model."""
    with torch.no_grad():
        predicted = linear(weights, 4, 5)(VX).argmax(-1).numpy()
    truth = VY.numpy()
    return {"val_precision": sk.precision_score(truth, predicted, average="macro", zero_division=0),
            "val_recall": sk.recall_score(truth, predicted, average="macro", zero_division=0),
            "val_f1": sk.f1_score(truth, predicted, average="macro", zero_division=0),
            "val_f1_micro": sk.f1_score(truth, predicted, average="micro", zero_division=0),
            "val_confusion": sk.confusion_matrix(truth, predicted, labels=range(5)).tolist()}


def assert_equal_figures(row, want):
    assert row["val_confusion"] == want.pop("val_confusion")
    for name, value in want.items():
        assert row[name] == pytest.approx(value, abs=1e-6), name


def test_classification_metrics_equal_sklearn_over_the_validation_epoch(sh):
    row, weights = fit_and_read(sh, "'linear 4 5'", "--loss cross_entropy --metrics "
                                "precision,recall,f1,f1_micro,confusion,accuracy", X, Y, VX, VY)
    assert_equal_figures(row, sklearn_classification(weights))
    assert row["val_f1_micro"] == pytest.approx(row["val_accuracy"], abs=1e-9)  # one label a sample
    assert len(row["confusion"]) == 5 and sum(map(sum, row["confusion"])) == 60  # train: every sample once


def test_regression_metrics_equal_sklearn_over_the_validation_epoch(sh):
    x, y, vx, vy = REGRESSION_X[:37], REGRESSION_Y[:37], REGRESSION_X[37:], REGRESSION_Y[37:]
    row, weights = fit_and_read(sh, "'linear 3 2'", "--loss mse_loss --metrics mae,rmse,r2 --monitor val_rmse",
                                x, y, vx, vy)
    with torch.no_grad():
        predicted = linear(weights, 3, 2)(vx).double().numpy()
    truth = vy.double().numpy()
    assert row["val_mae"] == pytest.approx(sk.mean_absolute_error(truth, predicted), abs=1e-6)
    assert row["val_rmse"] == pytest.approx(sk.root_mean_squared_error(truth, predicted), abs=1e-6)
    assert row["val_r2"] == pytest.approx(sk.r2_score(truth, predicted), abs=1e-6)


@pytest.mark.parametrize("monitor", ["val_mae", "val_rmse"])
def test_mae_and_rmse_improve_downwards_for_patience(sh, monitor):
    out = sh("m=$(torch nn sequential 'linear 3 2'); o=$(torch optim sgd $m --lr 0.05); "
             "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8 --shuffle --seed 11); "
             "torch fit $m $o $L --val $L --loss mse_loss --metrics mae,rmse --epochs 4 --patience 1 --monitor %s --json"
             % (sh.put(REGRESSION_X), sh.put(REGRESSION_Y), monitor))
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 4  # each epoch lowered it: no early stop
    assert all(a[monitor] > b[monitor] for a, b in zip(rows, rows[1:]))


@pytest.mark.slow  # two gloo ranks
def test_two_ranks_sum_their_confusion_matrices_and_the_figures_equal_sklearn_on_the_whole_val_set(sh):
    row, weights = fit_and_read(sh, "'linear 4 5'", "--loss cross_entropy --metrics "
                                "precision,recall,f1,f1_micro,confusion --nproc_per_node 2", X, Y, VX, VY)
    assert_equal_figures(row, sklearn_classification(weights))
    assert sum(map(sum, row["confusion"])) == 60


def test_a_run_resumed_mid_epoch_carries_the_epochs_confusion_and_sums_over(sh):
    # 8 batches an epoch: the run stops at step 11, mid-epoch 2, and --resume auto finishes it
    fit = ("torch manual_seed 0; m=$(torch nn sequential 'linear 4 5'); o=$(torch optim sgd $m --lr 0.05); "
           "L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 8 --shuffle --seed 11); "
           "torch fit $m $o $L --loss cross_entropy --epochs 3 --metrics confusion,f1 --log {log} ")
    x, y = sh.put(X), sh.put(Y)
    straight, stopped = sh.tmp("straight"), sh.tmp("stopped")
    sh(fit.format(x=x, y=y, log=straight) + ">/dev/null")
    sh(fit.format(x=x, y=y, log=stopped) + "--max_steps 11 >/dev/null; "
       + fit.format(x=x, y=y, log=stopped) + "--resume auto >/dev/null")
    rows = {}
    for folder in (straight, stopped):
        with open(os.path.join(folder, "metrics.jsonl")) as f:
            rows[folder] = [{k: r[k] for k in ("epoch", "confusion", "f1")}
                            for r in map(json.loads, f) if r["kind"] == "epoch"]
    assert rows[stopped] == rows[straight] and len(rows[straight]) == 3


def test_an_unknown_metric_is_refused_with_the_list_of_names(sh):
    r = sh.run("m=$(torch nn sequential 'linear 4 5'); o=$(torch optim sgd $m --lr 0.05); "
               "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8); "
               "torch fit $m $o $L --loss cross_entropy --metrics precision,auroc" % (sh.put(X), sh.put(Y)))
    assert r.code != 0
    assert "unknown metric 'auroc'" in r.err
    assert "accuracy top5 precision recall f1 f1_micro confusion mae rmse r2" in r.err
    assert "[bad_argument]" in r.err


def test_the_confusion_matrix_cannot_be_monitored(sh):
    r = sh.run("m=$(torch nn sequential 'linear 4 5'); o=$(torch optim sgd $m --lr 0.05); "
               "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8); "
               "torch fit $m $o $L --loss cross_entropy --metrics confusion,f1 --monitor confusion"
               % (sh.put(X), sh.put(Y)))
    assert r.code != 0 and "--monitor confusion is not a column" in r.err and "f1" in r.err


def test_plot_confusion_draws_the_last_validation_matrix_as_a_table_and_a_png(sh):
    folder = sh.tmp("run")
    sh("m=$(torch nn sequential 'linear 4 5'); o=$(torch optim sgd $m --lr 0.05); "
       "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8); "
       "V=$(torch data loader $(torch data tensors %s %s) --batch_size 7); torch fit $m $o $L --val $V "
       "--loss cross_entropy --epochs 2 --metrics confusion --log %s >/dev/null"
       % (sh.put(X), sh.put(Y), sh.put(VX), sh.put(VY), folder))
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        matrix = [json.loads(line) for line in f][-1]["val_confusion"]
    lines = sh("torch plot --confusion %s" % folder).split("\n")
    assert lines[0] == "val_confusion, epoch 2 (rows: target class, columns: predicted class)"
    assert lines[1].split() == ["0", "1", "2", "3", "4"]
    assert [[int(v) for v in line.split()] for line in lines[2:]] == [[k] + row for k, row in enumerate(matrix)]
    png = sh.tmp("confusion.png")
    assert sh("torch plot %s --confusion --png %s" % (folder, png)) == png
    with Image.open(png) as image:
        assert image.size == (800, 500)
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3).astype(int)
    assert int((pixels[:, 2] > pixels[:, 0] + 60).sum()) > 5000  # the Blues heatmap's cells


def test_plot_confusion_labels_the_classes_by_the_names_the_run_learnt_from_its_data(sh):
    """A table whose target column holds names: the run's card (run.json) keeps them, sorted, as its classes."""
    names, folder = ["cat", "dog", "bird"], sh.tmp("named")
    os.makedirs(folder)
    with open(os.path.join(folder, "pets.csv"), "w") as f:
        f.write("a,b,kind\n" + "".join("%s,%s,%s\n" % (x[0].item(), x[1].item(), names[int(y) % 3])
                                        for x, y in zip(X, Y)))
    sh("cd %s && m=$(torch nn sequential 'linear 2 3'); o=$(torch optim sgd $m --lr 0.05); "
       "L=$(torch data loader $(torch data open pets.csv --target kind) --batch_size 8); "
       "torch fit $m $o $L --epochs 1 --metrics confusion --log run >/dev/null" % folder)
    with open(os.path.join(folder, "run", "metrics.jsonl")) as f:
        matrix = [json.loads(line) for line in f][-1]["confusion"]
    lines = sh("torch plot --confusion %s/run" % folder).split("\n")
    assert lines[1].split() == ["bird", "cat", "dog"]
    assert [line.split() for line in lines[2:]] == [[k] + [str(v) for v in row]
                                                    for k, row in zip(["bird", "cat", "dog"], matrix)]


def test_plot_confusion_of_a_run_without_one_says_how_to_log_it(sh):
    jsonl = sh.tmp("metrics.jsonl")
    sh("printf '%%s\\n' '{\"kind\":\"epoch\",\"epoch\":1,\"loss\":2.0}' > %s" % jsonl)
    r = sh.run("torch plot --confusion %s" % jsonl)
    assert r.code != 0 and "no rows hold a confusion matrix" in r.err and "--metrics confusion" in r.err


def test_a_class_metric_of_a_regression_and_outputs_of_another_shape_than_the_targets_are_refused(sh):
    run = ("m=$(torch nn linear 3 2); L=$(torch data loader $(torch data tensors %s %s) --batch_size 10); "
           "torch fit $m $(torch optim sgd $m) $L --loss mse_loss --metrics ")
    floats = sh.run(run % (sh.put(REGRESSION_X), sh.put(REGRESSION_Y)) + "f1")
    assert floats.code == 2 and "--metrics f1: the model is a regression one" in floats.err, floats.err
    assert "scored by mae, rmse, r2" in floats.err and "[bad_argument]" in floats.err
    shapes = sh.run(run % (sh.put(REGRESSION_X), sh.put(REGRESSION_Y[:, :1])) + "r2")
    assert shapes.code != 0 and "the model gives [2] per item for targets of [1]" in shapes.err, shapes.err
    assert "[shape_mismatch]" in shapes.err
