"""A generator of end-to-end pipelines (issue 36, "one model, one meaning"): each a small dataclass drawn from
a seed, its data files, and the bash script that runs it through the shell (data open, transform, split, loader,
fit --val, predict, evaluate, model export, serve). pipelines_oracle.py, beside this file, writes the same pipeline in plain
PyTorch; pipelines_check.py runs both and compares (tests/e2e/test_pipelines.py, tests/smoke/).

The kinds cycle with the seed, so every slice of consecutive seeds mixes them: the task (seed % 3), the data
format ((seed // 3) % 2) and the standardization ((seed + seed // 3) % 3: seeds 0-8 hold every task with every
standardization, 0-17 every task, format and standardization); everything else is drawn from the seed.
Numbers are float32 values written exactly (the repr of the double they are), so the CSV the daemon parses and
the arrays the oracle holds are the same bits.
"""
import csv
import json
import os
import random
import sys
from dataclasses import dataclass

import numpy as np

COUNT = 208            # pipelines in all: FAST in the fast tier (tests/smoke), the rest in tests/e2e (slow)
FAST = tuple(range(12))
EXPORT_EVERY = 8       # an ONNX export costs ~2.5 s: every 8th pipeline exports (26 of 208)
POOL = ("owl", "bee", "yak", "cat", "eel", "ant", "fox")  # class names, drawn unsorted: their sorted order differs
TASKS = ("multiclass", "binary", "regression")
STANDARDIZE = ("none", "whole", "train")  # none; the whole file, then split; the training split only
METRICS = {"multiclass": ("accuracy", "f1", "precision", "recall", "confusion"),
           "binary": ("accuracy", "f1", "precision", "recall", "confusion"),
           "regression": ("mae", "rmse", "r2")}
FRACTIONS = ((0.75, 0.25), (0.7, 0.3), (0.8, 0.2), (0.6, 0.2, 0.2), (0.5, 0.3, 0.2), "counts")

@dataclass(frozen=True)
class Pipeline:
    seed: int
    task: str           # multiclass | binary | regression
    fmt: str            # csv (a header, the target last) | npy (x.npy y.npy)
    target: str         # names (class names, csv only) | ints (class indices, 0/1, counts) | floats (values, 0./1.)
    target_shape: tuple  # per item in the file: () or, for a regression's y.npy, (1,) or (2,)
    classes: int        # the head's class scores (multiclass), 0 otherwise
    cast: str           # integer targets to float32 (BCE, a regression) at: open (csv) | fit | transform; or ""
    rows: int
    features: int
    constant: bool      # feature 0 is constant (standardization's std 0 read as 1)
    hidden: tuple       # the MLP's hidden widths (relu between): () is one linear layer
    flatten: bool       # the head ends in 'flatten 0': one value per item, [N]
    loss: str
    loss_args: dict
    optimizer: tuple    # (name, {flag: value})
    batch: int
    drop_last: bool     # the training loader's --drop_last
    val_batch: int
    predict_batch: int  # predict's --batch_size (256: its default, not given)
    shuffle: bool
    epochs: int
    metrics: tuple
    standardize: str    # STANDARDIZE
    val_raw: bool       # --val on the raw split (else the standardized one)
    lengths: tuple      # data split's fractions or counts: train, val[, test]
    split_seed: int
    loader_seed: int
    manual_seed: int
    export: bool
    proba: bool

    @property
    def width(self):
        """The head's outputs."""
        return self.classes if self.task == "multiclass" else (self.target_shape or (1,))[0]

    @property
    def layers(self):
        """The sequential's layers as `torch nn sequential` words: ('linear', a, b), ('relu',), ('flatten', 0)."""
        sizes = (self.features,) + self.hidden + (self.width,)
        out = []
        for k in range(len(sizes) - 1):
            out += [("linear", sizes[k], sizes[k + 1])] + ([("relu",)] if k < len(sizes) - 2 else [])
        return out + ([("flatten", 0)] if self.flatten else [])

    @property
    def kind(self):
        return "%s-%s-%s-%s" % (self.task, self.fmt, self.target, self.standardize)


def draw(seed):
    """Pipeline number SEED: the same every time."""
    rnd = random.Random(seed)
    task, fmt = TASKS[seed % 3], ("csv", "npy")[(seed // 3) % 2]
    target, shape, cast, flatten = _target(rnd, seed, task, fmt)
    loss, loss_args = _loss(rnd, task)
    standardize = STANDARDIZE[(seed + seed // 3) % 3]
    rows, batch = rnd.randrange(60, 201), rnd.choice((8, 16, 32, 64))
    lengths = rnd.choice(FRACTIONS)
    if lengths == "counts":
        train = rnd.randrange(rows // 2, rows - 10)
        lengths = (train, rows - train)
    return Pipeline(
        seed=seed, task=task, fmt=fmt, target=target, target_shape=shape,
        classes=rnd.randrange(3, 6) if task == "multiclass" else 0, cast=cast, rows=rows,
        features=rnd.randrange(2, 7), constant=rnd.random() < 0.15,
        hidden=tuple(rnd.choice((4, 6, 8, 12)) for _ in range(rnd.choice((0, 0, 1, 2)))), flatten=flatten,
        loss=loss, loss_args=loss_args, optimizer=_optimizer(rnd), batch=batch,
        drop_last=batch <= 16 and rnd.random() < 0.3,  # a small batch: the training split keeps some
        val_batch=rnd.choice((7, 16, 50, 256)), predict_batch=rnd.choice((256, 256, 32, 9)),
        shuffle=rnd.random() < 0.8, epochs=rnd.randrange(1, 4),
        metrics=tuple(rnd.sample(METRICS[task], rnd.randrange(1, len(METRICS[task]) + 1))),
        standardize=standardize, val_raw=standardize != "none" and rnd.random() < 0.5, lengths=lengths,
        split_seed=rnd.randrange(1000), loader_seed=rnd.randrange(1000), manual_seed=rnd.randrange(1000),
        export=seed % EXPORT_EVERY == 0, proba=task != "regression" and rnd.random() < 0.7)


def _target(rnd, seed, task, fmt):
    """(target kind, per-item shape in the file, where integer targets become float32, head ends in flatten)."""
    if task == "multiclass":
        return rnd.choice(("names", "ints") if fmt == "csv" else ("ints",)), (), "", False
    if task == "binary":
        target = rnd.choice(("names", "ints", "floats") if fmt == "csv" else ("ints", "floats"))
        return target, (), _cast(seed, fmt, target), rnd.random() < 0.5
    shape = () if fmt == "csv" else rnd.choice(((), (1,), (2,)))
    target = rnd.choice(("floats", "floats", "ints"))  # ints: counts, read as int64, which mse_loss refuses
    return target, shape, _cast(seed, fmt, target), shape == () and rnd.random() < 0.5  # [] vs a head's [1]: viewed


def _cast(seed, fmt, target):
    """Where integer targets become float32, cycling with the seed (so the fast slice holds each)."""
    places = ("fit", "transform", "open") if fmt == "csv" else ("fit", "transform")  # --target_dtype: tables only
    return "" if target == "floats" else places[(seed // 6) % len(places)]


def _loss(rnd, task):
    if task == "multiclass":
        return "cross_entropy", rnd.choice(({}, {}, {"label_smoothing": 0.1}))
    if task == "binary":
        return "binary_cross_entropy_with_logits", {}
    loss = rnd.choice(("mse_loss", "l1_loss", "huber_loss"))
    return loss, ({"delta": 0.5} if loss == "huber_loss" and rnd.random() < 0.5 else {})


def _optimizer(rnd):
    # small steps: the features are not scaled, and a diverged run compares NaN with NaN
    return rnd.choice((("sgd", {"lr": 0.02}), ("sgd", {"lr": 0.005, "momentum": 0.9}), ("adam", {"lr": 0.01}),
                       ("adam", {"lr": 0.003})))


@dataclass
class Data:
    x: np.ndarray       # [rows, features] float32
    labels: list        # the target as written: names (str), ints, or floats (float32 values), one per row
    y: np.ndarray       # the target as the daemon reads it: class indices (int64) or float32 values
    class_names: list   # the names the model's classes go by (sorted names; "0".."k-1" otherwise), or None


def data(p):
    """The pipeline's rows, drawn from its seed: features with columns of their own scale and offset."""
    rng = np.random.default_rng(p.seed)
    x = rng.standard_normal((p.rows, p.features)) * rng.uniform(0.5, 5, p.features) + rng.uniform(-3, 3, p.features)
    if p.constant:
        x[:, 0] = 1.5
    x = x.astype(np.float32)
    score = (x - x.mean(0)) / (x.std(0) + 1) @ rng.standard_normal((p.features, max(p.width, 2)))
    score += 0.3 * rng.standard_normal(score.shape)
    if p.task == "regression":
        y = score[:, :p.width].reshape((p.rows,) + p.target_shape)
        y = np.rint(3 * y).astype(np.int64) if p.target == "ints" else y.astype(np.float32)
        return Data(x, y.tolist(), y, None)
    if p.task == "binary":
        index = (score[:, 0] > np.median(score[:, 0])).astype(np.int64)
    else:
        index = score[:, :p.classes].argmax(1)
        index[:p.classes] = np.arange(p.classes)  # every class occurs
    if p.target == "names":
        names = list(rng.permutation(POOL)[:max(p.classes, 2)])
        ordered = sorted(names)
        return Data(x, [names[k] for k in index], np.array([ordered.index(names[k]) for k in index]), ordered)
    count = max(p.classes, 2)
    if p.target == "floats":
        return Data(x, [float(k) for k in index], index.astype(np.float32), [str(k) for k in range(count)])
    return Data(x, index.tolist(), index, [str(k) for k in range(count)])


def write_data(p, folder):
    """The pipeline's data files in FOLDER (t.csv, or x.npy and y.npy) and infer.json (a V2 request of every
    raw row, as `torch serve` takes it)."""
    d = data(p)
    if p.fmt == "csv":
        with open(os.path.join(folder, "t.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["f%d" % k for k in range(p.features)] + ["y"])
            for row, label in zip(d.x.tolist(), d.labels):
                w.writerow([repr(v) for v in row] + [repr(label) if isinstance(label, float) else label])
    else:
        np.save(os.path.join(folder, "x.npy"), d.x)
        np.save(os.path.join(folder, "y.npy"), d.y)
    request = {"inputs": [{"name": "input__0", "shape": list(d.x.shape), "datatype": "FP32",
                           "data": d.x.reshape(-1).tolist()}]}
    with open(os.path.join(folder, "infer.json"), "w") as f:
        json.dump(request, f)
    return d


def script(p):
    """The pipeline through the shell, one bash script run in the data's folder: fit's rows go to fit.jsonl,
    predict's to predict.json, evaluate's to evaluate.json, the weights to init/final.safetensors, the model's
    card to card.json, the ONNX file to m.onnx, serve's V2 answer to served.json."""
    layers = " ".join("'%s'" % " ".join(map(str, layer)) if len(layer) > 1 else layer[0] for layer in p.layers)
    shuffle = " --shuffle --seed %d" % p.loader_seed if p.shuffle else ""
    options = " ".join("--%s %s" % option for option in p.optimizer[1].items())
    fit = "--loss %s%s%s --metrics %s --epochs %d" % (p.loss, _loss_args(p), " --target_dtype float32"
                                                      if p.cast == "fit" else "", ",".join(p.metrics), p.epochs)
    predict = (" --proba" if p.proba else "") + (" --batch_size %d" % p.predict_batch if p.predict_batch != 256 else "")
    lines = ["set -e", "export TORCHSH_SCOPE=$(torch scope begin); trap 'torch scope end' EXIT  # frees what it makes",
             "torch manual_seed %d >/dev/null" % p.manual_seed, "m=$(torch nn sequential %s)" % layers,
             "torch nn save $m init.safetensors >/dev/null", _open(p)] + _split(p) + [
        "L=$(torch data loader $train --batch_size %d%s%s)" % (p.batch, shuffle, " --drop_last" if p.drop_last else ""),
        "V=$(torch data loader $val --batch_size %d)" % p.val_batch,
        "o=$(torch optim %s $m %s)" % (p.optimizer[0], options),
        "torch fit $m $o $L --val $V %s --json > fit.jsonl" % fit,
        "torch nn save $m final.safetensors >/dev/null; torch model card --json $m > card.json",
        "torch predict --json%s $m $test > predict.json" % predict,
        # no --loss, no --loss_args: the card keeps fit's loss with its options, and evaluate scores with them
        "torch evaluate --json $m $V --metrics %s > evaluate.json" % ",".join(p.metrics)]
    if p.export:
        lines.append("torch model export $m m.onnx --example 1,%d --dynamic 0 >/dev/null" % p.features)
    return "\n".join(lines + [
        "job=$(torch serve $m --name p%d --detach)" % p.seed,
        "trap 'torch job stop $job >/dev/null; torch scope end' EXIT",
        "curl -sS --fail-with-body --unix-socket \"$TORCHSH_SOCKET\" -d @infer.json "
        "http://localhost/v2/models/p%d/infer > served.json" % p.seed]) + "\n"


def _open(p):
    if p.fmt == "npy":
        opened = "torch data open x.npy y.npy"
    else:
        opened = "torch data open t.csv --target y%s" % (" --target_dtype float32" if p.cast == "open" else "")
    if p.cast == "transform":  # the target (the last field) as float32
        return "raw=$(%s); src=$(torch data transform $raw --dtype float32 --field -1)" % opened
    return "raw=$(%s); src=$raw" % opened


def _split(p):
    """Lines that set $train, $val and $test (raw rows: a third split, or the whole file)."""
    parts, lengths = "a b c" if len(p.lengths) == 3 else "a b", " ".join(map(str, p.lengths))
    split = "torch data split %%s %s --seed %d | xargs" % (lengths, p.split_seed)
    lines = ["read -r %s < <(%s)" % (parts, split % "$src")]
    test = "test=$c" if len(p.lengths) == 3 else "test=$raw"
    if p.standardize == "none":
        return lines + ["train=$a; val=$b", test]
    if p.standardize == "whole":  # the whole file's statistics; the same split of the standardized rows
        lines += ["d=$(torch data transform $src --standardize)",
                  "read -r %s < <(%s)" % (" ".join("s" + x for x in parts.split()), split % "$d"),
                  "train=$sa; val=%s" % ("$b" if p.val_raw else "$sb")]
    else:  # the training split's statistics: the val split raw, or standardized like the training split
        lines += ["train=$(torch data transform $a --standardize)",
                  "val=%s" % ("$b" if p.val_raw else "$(torch data transform $b --standardize_like $train)")]
    return lines + [test]


def _loss_args(p):
    return " --loss_args '%s'" % json.dumps(p.loss_args) if p.loss_args else ""


def rerun(p, folder):
    """The pipeline as a script a human reruns: where its files are, the line that writes its data, the script."""
    return ("# pipeline %d (%s); its files: %s\n# rerun in an empty folder, with torch on PATH and a daemon:\n"
            "%s -c 'import sys; sys.path.insert(0, \"%s\"); import pipelines; pipelines.write_data("
            "pipelines.draw(%d), \".\")'\n%s" % (p.seed, p, folder, sys.executable,
                                                 os.path.dirname(os.path.abspath(__file__)), p.seed, script(p)))
