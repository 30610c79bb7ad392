"""One model, one meaning (docs/models.md#the-models-card): what `torch fit` records of the data travels with
the model, and every verb that feeds the model or reads its output goes by it. Each test is one of the cases
that used to give a silently wrong number, checked against the same pipeline written in plain PyTorch."""
import csv
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from sklearn import datasets
from sklearn.metrics import f1_score
from torch.utils.data import DataLoader, Subset, TensorDataset


def _write_csv(path, names, x, y):
    """A CSV whose numbers are float32 values written exactly (repr of the double they are): parsed back, the
    daemon and the oracle hold the same bits."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for k, row in enumerate(x.tolist()):
            w.writerow([repr(v) for v in row] + ([y[k]] if y else []))  # no y: an unlabeled table


def _standardized(x):
    """data/standardize.py's statistics in one chunk (fewer than 4096 rows): float64 mean, population std."""
    x64 = x.to(torch.float64)
    mean = x64.mean(0)
    std = (((x64 - mean) ** 2).sum(0) / x64.shape[0]).sqrt()
    std[std == 0] = 1.0
    return ((x64 - mean) / std).to(torch.float32)


def _diabetes(sh):
    d = datasets.load_diabetes()
    x = torch.tensor(d.data, dtype=torch.float32)
    y = torch.tensor(d.target, dtype=torch.float32)
    path = sh.tmp("diabetes.csv")
    _write_csv(path, list(d.feature_names) + ["progression"], x, [repr(v) for v in y.tolist()])
    return path, x, y


def _cancer(sh):
    d = datasets.load_breast_cancer()
    x = torch.tensor(d.data, dtype=torch.float32)
    names = ["malignant", "benign"]  # sklearn's 0 and 1; torchsh numbers class names sorted: benign 0, malignant 1
    labels = [names[t] for t in d.target]
    path = sh.tmp("cancer.csv")
    _write_csv(path, [n.replace(" ", "_") for n in d.feature_names] + ["diagnosis"], x, labels)
    y = torch.tensor([1.0 if label == "malignant" else 0.0 for label in labels])
    return path, x, y


def test_a_csv_regression_with_a_scalar_target_trains_as_pytorch_with_the_target_viewed_as_the_output(sh):
    path, x, y = _diabetes(sh)
    first, last = sh.tmp("first.safetensors"), sh.tmp("last.safetensors")
    r = sh.run("torch manual_seed 0 >/dev/null; m=$(torch nn sequential 'linear 10 32' relu 'linear 32 1'); "
               "torch nn save $m %s; o=$(torch optim adam $m --lr 0.01); "
               "d=$(torch data transform $(torch data open %s --target progression --target_dtype float32) --standardize); "
               "torch fit $m $o $(torch data loader $d --batch_size 32 --shuffle --seed 0) --loss mse_loss --metrics r2 "
               "--epochs 20 --json && torch nn save $m %s" % (first, path, last))
    assert r.code == 0, r.err
    assert "viewed as the output's [1]" in r.err  # said once, before training
    model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    model.load_state_dict(load_file(first))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(_standardized(x), y), batch_size=32, shuffle=True,
                        generator=torch.Generator().manual_seed(0))
    for _ in range(20):
        for xb, yb in loader:
            opt.zero_grad()
            F.mse_loss(model(xb), yb.view(-1, 1)).backward()  # what a PyTorch user writes: the shapes agree
            opt.step()
    got = load_file(last)
    assert all(torch.equal(got[k], v) for k, v in model.state_dict().items())
    final = json.loads(r.out.strip().split("\n")[-1])
    assert final["r2"] > 0.4  # it learned (broadcast into [32, 32], it ended at r2 ~0.04: the mean)


def test_a_one_logit_binary_classifier_is_scored_and_predicted_by_its_logit(sh):
    path, x, y = _cancer(sh)
    first = sh.tmp("first.safetensors")
    rows = sh("torch manual_seed 0 >/dev/null; m=$(torch nn sequential 'linear 30 1' 'flatten 0'); torch nn save $m %s; "
              "o=$(torch optim adam $m --lr 0.01); "
              "d=$(torch data transform $(torch data open %s --target diagnosis --target_dtype float32) --standardize); "
              "V=$(torch data loader $d --batch_size 100); "
              "torch fit $m $o $(torch data loader $d --batch_size 64 --shuffle --seed 0) --val $V "
              "--loss binary_cross_entropy_with_logits --metrics accuracy,f1,precision,recall --json; "
              "torch model card --json $m; torch predict --json $m $(torch data open %s --target diagnosis)"
              % (first, path, path)).split("\n")
    row, card, predicted = json.loads(rows[0]), json.loads(rows[1]), json.loads(rows[2])
    assert card["task"] == "binary" and card["decision"] == "logit>0" and card["classes"] == ["benign", "malignant"]
    model = torch.nn.Sequential(torch.nn.Linear(30, 1), torch.nn.Flatten(0))
    model.load_state_dict(load_file(first))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    xs = _standardized(x)
    for xb, yb in DataLoader(TensorDataset(xs, y), batch_size=64, shuffle=True,
                             generator=torch.Generator().manual_seed(0)):
        opt.zero_grad()
        F.binary_cross_entropy_with_logits(model(xb), yb).backward()
        opt.step()
    with torch.no_grad():
        decided = (model(xs) > 0).long()
    assert row["val_accuracy"] == pytest.approx((decided == y.long()).double().mean().item(), abs=1e-12)
    assert row["val_f1"] == pytest.approx(f1_score(y.long().numpy(), decided.numpy(), average="macro"), abs=1e-9)
    assert 0.9 < row["val_accuracy"]  # one logit was argmax'ed over a single score: accuracy 0 to 0.10
    assert [p["prediction"] for p in predicted] == [["benign", "malignant"][i] for i in decided.tolist()]


def test_fit_val_on_the_raw_split_is_scored_as_the_standardized_rows_it_stands_for(sh):
    path, _, _ = _cancer(sh)
    out = sh("torch manual_seed 0 >/dev/null; raw=$(torch data open %s --target diagnosis --target_dtype float32); "
             "d=$(torch data transform $raw --standardize); m=$(torch nn linear 30 1); o=$(torch optim sgd $m --lr 0.1); "
             "L=$(torch data loader $d --batch_size 64); torch manual_seed 0 >/dev/null; m2=$(torch nn linear 30 1); "
             "o2=$(torch optim sgd $m2 --lr 0.1); "
             "torch fit $m $o $L --val $(torch data loader $raw --batch_size 100) "
             "--loss binary_cross_entropy_with_logits --metrics accuracy --json; "
             "torch fit $m2 $o2 $L --val $(torch data loader $d --batch_size 100) "
             "--loss binary_cross_entropy_with_logits --metrics accuracy --json" % path).split("\n")
    raw, standardized = json.loads(out[0]), json.loads(out[1])
    assert raw["val_loss"] == standardized["val_loss"] and raw["val_accuracy"] == standardized["val_accuracy"]


@pytest.mark.parametrize("head,flags,refusal", [
    ("'linear 10 1'", "--loss cross_entropy", "on a head of one output is 0 whatever the weights"),
    ("'linear 10 3'", "--loss cross_entropy", "the targets go up to 346"),  # a regression's integers, 3 outputs
    ("'linear 10 3'", "--loss mse_loss --target_dtype float32", "the model gives [3] per item for targets of []"),
])
def test_targets_a_head_cannot_fit_are_refused_before_training_with_the_fix(sh, head, flags, refusal):
    path, _, _ = _diabetes(sh)
    with open(path) as f:
        text = f.read().replace(".0\n", "\n")  # integer targets: progression is an int64 column
    with open(path, "w") as f:
        f.write(text)
    r = sh.run("m=$(torch nn sequential %s); before=$(torch nn parameters $m | torch sum | torch value); "
               "torch fit $m $(torch optim sgd $m) $(torch data loader $(torch data open %s --target progression)) %s; "
               "rc=$?; [ \"$before\" = \"$(torch nn parameters $m | torch sum | torch value)\" ] || echo CHANGED; exit $rc"
               % (head, path, flags))
    assert r.code == 4 and refusal in r.err and "[shape_mismatch]" in r.err, r.err
    assert "CHANGED" not in r.out


def test_predict_refuses_columns_in_another_order_or_the_target_as_an_input_with_the_fix(sh):
    path, x, y = _cancer(sh)
    with open(path) as f:
        names = f.readline().strip().split(",")
    swapped, numeric = sh.tmp("swapped.csv"), sh.tmp("numeric.csv")
    _write_csv(swapped, [names[1], names[0]] + names[2:30], x[:3, [1, 0] + list(range(2, 30))], [])
    _write_csv(numeric, names, x, [int(v) for v in y.tolist()])  # the label as 0/1: a number column
    fit = ("m=$(torch nn linear 30 1); torch fit $m $(torch optim sgd $m) $(torch data loader $(torch data open %s "
           "--target diagnosis --target_dtype float32)) --loss binary_cross_entropy_with_logits >/dev/null 2>&1; ")
    r = sh.run(fit % path + "torch predict $m $(torch data open %s)" % swapped)
    assert r.code == 4 and "--columns %s" % ",".join(names[:30]) in r.err and "[shape_mismatch]" in r.err, r.err
    assert "column 0 is 'mean_texture' where the model was trained on 'mean_radius'" in r.err
    r = sh.run(fit % numeric + "torch predict $m $(torch data open %s)" % numeric)
    assert r.code == 4 and "hold the target 'diagnosis' as an input" in r.err and "--target diagnosis" in r.err, r.err


def test_predict_refuses_data_standardized_with_statistics_of_its_own(sh):
    path, _, _ = _cancer(sh)
    r = sh.run("raw=$(torch data open %s --target diagnosis --target_dtype float32); read -r a b < <(torch data split "
               "$raw 0.5 0.5 --seed 0 | xargs); m=$(torch nn linear 30 1); "
               "torch fit $m $(torch optim sgd $m) $(torch data loader $(torch data transform $a --standardize)) "
               "--loss binary_cross_entropy_with_logits >/dev/null; "
               "torch predict $m $(torch data transform $b --standardize)" % path)
    assert r.code != 0 and "standardized with statistics of its own" in r.err and "--standardize_like" in r.err


def test_the_card_travels_with_a_pt_and_a_checkpoint(sh):
    path, _, _ = _cancer(sh)
    pt, log = sh.tmp("m.pt"), sh.tmp("run")
    cards = sh("m=$(torch nn linear 30 1); torch fit $m $(torch optim sgd $m) $(torch data loader $(torch data "
               "open %s --target diagnosis --target_dtype float32)) --loss binary_cross_entropy_with_logits --log %s "
               ">/dev/null; torch model card --json $m; torch nn save $m %s; m2=$(torch nn linear 30 1); "
               "torch nn load $m2 %s >/dev/null; torch model card --json $m2; m3=$(torch nn linear 30 1); "
               "torch checkpoint load %s/last.safetensors $m3; torch model card --json $m3"
               % (path, log, pt, pt, log)).split("\n")
    first = json.loads(cards[0])
    assert first["task"] == "binary" and first["inputs"][0]["columns"][0] == "mean_radius"
    assert all(json.loads(c) == first for c in cards[1:])


def test_evaluate_scores_raw_rows_as_fit_val_scores_the_standardized_ones(sh):
    path, _, _ = _cancer(sh)
    out = sh("torch manual_seed 0 >/dev/null; raw=$(torch data open %s --target diagnosis --target_dtype float32); "
             "d=$(torch data transform $raw --standardize); m=$(torch nn sequential 'linear 30 1' 'flatten 0'); "
             "torch fit $m $(torch optim adam $m --lr 0.01) $(torch data loader $d --batch_size 64 --shuffle --seed 0) "
             "--val $(torch data loader $d --batch_size 100) --loss binary_cross_entropy_with_logits "
             "--metrics accuracy,f1 --epochs 2 --json | tail -1; "
             "torch evaluate --json $m $(torch data loader $raw --batch_size 100) --metrics accuracy,f1" % path)
    row, scores = (json.loads(line) for line in out.split("\n"))
    assert scores == {"loss": row["val_loss"], "accuracy": row["val_accuracy"], "f1": row["val_f1"]}
    r = sh.run("torch evaluate $(torch nn linear 30 1) $(torch data loader $(torch data open %s --target diagnosis))"
               % path)
    assert r.code == 2 and "--loss is needed" in r.err and "[missing_argument]" in r.err
