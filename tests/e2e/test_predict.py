"""`torch predict MODEL DATASET` through real bash: one row per item, joined back to its input by row number
(or image path), its class by name; the oracle is the same weights in a PyTorch twin run in-process,
equal bit for bit, and the input file read with the csv module."""
import csv
import json
import os

import numpy as np
import pyarrow.parquet as pq
import safetensors.torch
import torch
from PIL import Image

MODEL = "torch nn sequential 'linear 2 8' relu 'dropout --p 0.5' 'linear 8 3'"
NAMES = ("setosa", "versicolor", "virginica")


def _blobs(sh, n=30, seed=0):
    """An iris-like table: three separable Gaussian blobs, labelled by name."""
    g = np.random.default_rng(seed)
    path = sh.tmp("blobs.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b", "species"])
        for i in range(n):
            k = i % 3
            w.writerow(["%.3f" % v for v in g.normal(3.0 * k, 0.5, 2)] + [NAMES[k]])
    with open(path, newline="") as f:
        return path, list(csv.DictReader(f))


def _twin(sh, handle):
    """The model as a PyTorch module with the daemon's weights (saved through `torch nn save`)."""
    path = sh.tmp("w.safetensors")
    sh("torch nn save %s %s" % (handle, path))
    net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(8, 3))
    net.load_state_dict(safetensors.torch.load_file(path))
    return net.eval()


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_predictions_equal_the_model_in_pytorch_bit_for_bit_and_join_back_to_their_rows(sh):
    path, table = _blobs(sh)
    out = sh.tmp("preds.csv")
    m = sh(MODEL)
    sh("parts=($(torch data split $(torch data open %s --target species) 0.6 0.4 --seed 3)); "
       "torch predict %s ${parts[1]} --batch_size 4 --proba --out %s" % (path, m, out))
    preds = _read_csv(out)
    assert list(preds[0]) == ["row", "prediction", *NAMES]
    rows = [int(p["row"]) for p in preds]
    assert len(rows) == 12 and rows != sorted(rows)  # a split's items keep their rows in the whole file
    x = torch.tensor([[float(table[r]["a"]), float(table[r]["b"])] for r in rows])
    net = _twin(sh, m)
    with torch.inference_mode():
        logits = torch.cat([net(x[i:i + 4]) for i in range(0, len(x), 4)])  # the same batches
    proba = torch.tensor([[np.float32(p[c]) for c in NAMES] for p in preds])
    assert torch.equal(proba, torch.softmax(logits, dim=1))
    assert torch.allclose(proba.sum(1), torch.ones(len(preds)))
    assert [p["prediction"] for p in preds] == [NAMES[i] for i in logits.argmax(1).tolist()]
    assert json.loads(sh("torch nn info --json %s" % m))["mode"] == "train"  # its mode restored


def test_a_regression_prints_its_outputs_as_a_tab_separated_table_and_json_rows(sh):
    path = sh.tmp("xy.csv")
    with open(path, "w") as f:
        f.write("x1,x2,y\n0.5,1.5,2.25\n1.0,-2.0,0.5\n3.0,0.25,-1.75\n")
    m = sh("torch nn linear 2 1")
    d = sh("torch data open %s --target y" % path)
    text = sh("torch predict %s %s" % (m, d)).split("\n")
    assert text[0] == "row\tprediction"
    got = json.loads(sh("torch predict --json %s %s" % (m, d)))
    net = torch.nn.Linear(2, 1)
    w = sh.tmp("w.safetensors")
    sh("torch nn save %s %s" % (m, w))
    net.load_state_dict(safetensors.torch.load_file(w))
    with torch.inference_mode():
        want = net(torch.tensor([[0.5, 1.5], [1.0, -2.0], [3.0, 0.25]])).flatten()
    assert [r["row"] for r in got] == [0, 1, 2]
    assert torch.equal(torch.tensor([r["prediction"] for r in got], dtype=torch.float32), want)
    assert [line.split("\t") for line in text[1:]] == [[str(i), str(np.float32(v))] for i, v in enumerate(want.tolist())]
    assert "[bad_argument]" in sh.run("torch predict %s %s --proba" % (m, d)).err


def test_jsonl_and_parquet_outputs_read_back_as_the_csv_rows(sh):
    path, _ = _blobs(sh, n=9)
    m = sh(MODEL)
    d = sh("torch data open %s --target species" % path)
    outs = {ext: sh.tmp("p." + ext) for ext in ("csv", "jsonl", "parquet")}
    for out in outs.values():
        sh("torch predict %s %s --proba --out %s" % (m, d, out))
    with open(outs["jsonl"]) as f:
        lines = [json.loads(line) for line in f]
    table = pq.read_table(outs["parquet"]).to_pylist()
    assert lines == table
    assert [{k: str(np.float32(v)) if isinstance(v, float) else str(v) for k, v in r.items()} for r in lines] \
        == _read_csv(outs["csv"])
    assert "[bad_argument]" in sh.run("torch predict %s %s --out p.txt" % (m, d)).err


def test_an_image_folder_s_predictions_carry_their_file_paths(sh):
    root = sh.tmp("images")
    files = []
    for k, name in enumerate(("cat", "dog")):
        os.makedirs(os.path.join(root, name))
        for i in range(2):
            f = "%s/%s/%d.png" % (root, name, i)
            Image.fromarray(np.full((4, 4, 3), 60 * (k + i), np.uint8)).save(f)
            files.append(f)
    m = sh("torch nn sequential flatten 'linear 48 2'")
    got = json.loads(sh("torch predict --json %s $(torch data open %s)" % (m, root)))
    assert [r["path"] for r in got] == files
    assert {r["prediction"] for r in got} <= {"cat", "dog"}


def _unlabeled(path, table):
    """The table without its label column, as new data arrives."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b"])
        w.writerows([r["a"], r["b"]] for r in table)


def _meta(path):
    with safetensors.safe_open(path, framework="pt") as f:
        return json.loads(f.metadata()["torchsh"])


def test_fit_keeps_the_classes_with_the_model_and_predict_names_them_on_an_unlabeled_csv(sh):
    path, table = _blobs(sh)
    log, unlabeled = sh.tmp("run"), sh.tmp("new.csv")
    _unlabeled(unlabeled, table)
    got = sh("torch manual_seed 0; m=$(%s); o=$(torch optim adam $m --lr 0.05); "
             "L=$(torch data loader $(torch data open %s --target species) --batch_size 8 --shuffle --seed 0); "
             "torch fit $m $o $L --loss cross_entropy --epochs 30 --log %s > /dev/null; "
             "torch predict --json $m $(torch data open %s); "
             "m2=$(%s); torch checkpoint load %s/best.safetensors $m2; torch predict --json $m2 $(torch data open %s)"
             % (MODEL, path, log, unlabeled, MODEL, log, unlabeled)).split("\n")
    with open(log + "/run.json") as f:
        assert json.load(f)["contract"]["classes"] == list(NAMES)
    assert _meta(log + "/best.safetensors")["contract"] == _meta(log + "/last.safetensors")["contract"]
    assert _meta(log + "/best.safetensors")["contract"]["classes"] == list(NAMES)
    fitted, loaded = (json.loads(line) for line in got)
    assert [r["prediction"] for r in fitted] == [r["species"] for r in table]  # separable blobs: all right
    assert loaded == fitted


def test_predict_standardizes_raw_rows_with_the_statistics_the_model_was_trained_under(sh):
    path, table = _blobs(sh, n=12)
    unlabeled = sh.tmp("new.csv")
    _unlabeled(unlabeled, table)
    m = sh(MODEL)
    got = json.loads(sh("T=$(torch data transform $(torch data open %s --target species) --standardize); "
                        "o=$(torch optim sgd %s --lr 0.0); L=$(torch data loader $T --batch_size 4); "
                        "torch fit %s $o $L --loss cross_entropy > /dev/null; "
                        "torch predict --json --proba %s $(torch data open %s)" % (path, m, m, m, unlabeled)))
    x = torch.tensor([[float(r["a"]), float(r["b"])] for r in table], dtype=torch.float64)
    mean, std = x.mean(0), x.std(0, unbiased=False)  # StandardScaler's statistics
    with torch.inference_mode():
        logits = _twin(sh, m)(((x - mean) / std).float())
    proba = torch.tensor([[r[c] for c in NAMES] for r in got], dtype=torch.float32)
    assert torch.allclose(proba, torch.softmax(logits, 1), atol=1e-6)


def test_the_model_s_classes_name_its_outputs_on_labeled_data_missing_a_class(sh):
    path, table = _blobs(sh)
    test = sh.tmp("test.csv")
    with open(test, "w", newline="") as f:  # no versicolor: the labels' sorted names are two, the outputs three
        w = csv.writer(f)
        w.writerow(["a", "b", "species"])
        w.writerows([r["a"], r["b"], r["species"]] for r in table if r["species"] != "versicolor")
    got = json.loads(sh("m=$(%s); o=$(torch optim adam $m --lr 0.05); "
                        "L=$(torch data loader $(torch data open %s --target species) --batch_size 8 --seed 0); "
                        "torch fit $m $o $L --loss cross_entropy --epochs 30 > /dev/null; "
                        "torch predict --json $m $(torch data open %s --target species)" % (MODEL, path, test)))
    assert [r["prediction"] for r in got] == [r["species"] for r in table if r["species"] != "versicolor"]


def test_one_hot_categories_other_than_the_model_s_are_refused(sh):
    train, new = sh.tmp("train.csv"), sh.tmp("new.csv")
    with open(train, "w") as f:
        f.write("x,color,y\n1,blue,a\n2,red,b\n3,blue,a\n")
    with open(new, "w") as f:
        f.write("x,color\n1,green\n2,red\n")  # as wide one-hot, but its first column means green, not blue
    r = sh.run("m=$(torch nn linear 3 2); o=$(torch optim sgd $m --lr 0.1); "
               "L=$(torch data loader $(torch data open %s --target y --onehot color) --batch_size 3); "
               "torch fit $m $o $L --loss cross_entropy > /dev/null; "
               "torch predict $m $(torch data open %s --onehot color)" % (train, new))
    assert r.code != 0 and "[state_mismatch]" in r.err
    assert "['green', 'red'] here, and the model was trained on ['blue', 'red']" in r.err


def test_a_distributed_fit_keeps_the_classes_in_run_json_and_its_checkpoints(sh):
    path, _ = _blobs(sh, n=12)
    log = sh.tmp("run")
    sh("m=$(torch nn linear 2 3); o=$(torch optim sgd $m --lr 0.1); "
       "L=$(torch data loader $(torch data open %s --target species) --batch_size 3); "
       "torch fit $m $o $L --loss cross_entropy --nproc_per_node 2 --log %s > /dev/null" % (path, log), timeout=300)
    with open(log + "/run.json") as f:
        assert json.load(f)["contract"]["classes"] == list(NAMES)
    assert _meta(log + "/last.safetensors")["contract"]["classes"] == list(NAMES)  # written by rank 0
