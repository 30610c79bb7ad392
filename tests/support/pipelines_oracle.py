"""The pipelines of pipelines.py (beside this file) written in plain PyTorch, as a PyTorch user writes them: the rows as tensors,
random_split's index sets, StandardScaler's statistics (float64 mean, population std, a std of 0 read as 1, applied
in float64 and rounded once), the model loaded from the initial weights the shell saved, a DataLoader whose shuffle
generator is seeded as the loader's --seed, the loop (zero_grad, loss, backward, step), and each epoch's figures
computed by scikit-learn on all of its predictions."""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from sklearn import metrics as sk
from torch.utils.data import DataLoader, TensorDataset, random_split


@dataclass
class Outcome:
    rows: list          # one dict per epoch: loss, METRIC…, val_loss, val_METRIC…
    state: dict         # the final weights
    output: torch.Tensor  # the model's outputs on every raw row of the file (standardized as in training)
    test: list          # the rows predict reads (their indices in the file)
    decided: list       # predict's `prediction` per test row: a class name, or the output's values
    proba: list         # per test row, each class's probability (classifiers), else None
    classes: list       # the class names, in the order of the model's classes (None for a regression)
    statistics: tuple   # the standardization's (mean, std), float64, or None


def split_indices(p):
    """The index sets of `torch data split D L1 L2 [L3] --seed S` (random_split, fractions or counts)."""
    lengths = list(p.lengths)
    if all(float(x).is_integer() for x in lengths) and sum(lengths) > 1:
        lengths = [int(x) for x in lengths]
    parts = random_split(range(p.rows), lengths, generator=torch.Generator().manual_seed(p.split_seed))
    return [list(part.indices) for part in parts]


def statistics(x):
    """StandardScaler's: each column's float64 mean and population std (0 read as 1)."""
    x64 = x.to(torch.float64)
    mean = x64.mean(0)
    std = (((x64 - mean) ** 2).sum(0) / x64.shape[0]).sqrt()
    std[std == 0] = 1.0
    return mean, std


def standardized(x, stats):
    return x if stats is None else ((x.to(torch.float64) - stats[0]) / stats[1]).to(torch.float32)


def build(p, init):
    layers = {"linear": torch.nn.Linear, "relu": torch.nn.ReLU, "flatten": torch.nn.Flatten}
    model = torch.nn.Sequential(*[layers[name](*args) for name, *args in p.layers])
    model.load_state_dict(init)
    return model


def run(p, d, init):
    """The pipeline P on data D (pipelines.data) from the initial weights INIT: its Outcome."""
    x, y = torch.from_numpy(d.x), torch.from_numpy(d.y)
    if p.cast:
        y = y.to(torch.float32)
    parts = split_indices(p)
    train, val = parts[0], parts[1]
    stats = {"none": None, "whole": statistics(x), "train": statistics(x[train])}[p.standardize]
    model = build(p, init)
    optimizer = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[p.optimizer[0]](model.parameters(), **p.optimizer[1])
    loader = DataLoader(TensorDataset(standardized(x[train], stats), y[train]), batch_size=p.batch, shuffle=p.shuffle,
                        drop_last=p.drop_last, generator=torch.Generator().manual_seed(p.loader_seed))
    val_loader = DataLoader(TensorDataset(standardized(x[val], stats), y[val]), batch_size=p.val_batch)
    rows = []
    for _ in range(p.epochs):
        row = _epoch(p, model, loader, optimizer)
        row.update({"val_" + k: v for k, v in _epoch(p, model, val_loader, None).items()})
        rows.append(row)
    test = parts[2] if len(parts) == 3 else list(range(p.rows))
    model.eval()
    with torch.no_grad():
        output = model(standardized(x, stats))
        read = DataLoader(TensorDataset(standardized(x[test], stats)), batch_size=p.predict_batch)  # predict's batches
        test_output = torch.cat([model(xb) for (xb,) in read])
    decided, proba = _decided(p, d, test_output)
    return Outcome(rows, model.state_dict(), output, test, decided, proba, d.class_names, stats)


def _target(p, y):
    """The target as the loss takes it: viewed as the output's shape where they differ by a dimension of 1."""
    output_shape = () if p.flatten else (p.width,)
    if p.task != "multiclass" and tuple(p.target_shape) != output_shape:
        return y.view(len(y), *output_shape)
    return y


def _epoch(p, model, loader, optimizer):
    """One pass over LOADER (training when OPTIMIZER is given, else evaluation): its loss and figures."""
    loss_fn = getattr(F, p.loss)
    model.train(optimizer is not None)
    outputs, targets, total = [], [], 0.0
    with torch.set_grad_enabled(optimizer is not None):
        for xb, yb in loader:
            yb = _target(p, yb)
            if optimizer is not None:
                optimizer.zero_grad()
            out = model(xb)
            loss = loss_fn(out, yb, **p.loss_args)
            if optimizer is not None:
                loss.backward()
                optimizer.step()
            total += loss.item() * len(yb)
            outputs.append(out.detach())
            targets.append(yb)
    model.train()
    output, target = torch.cat(outputs), torch.cat(targets)
    return dict(loss=total / len(target), **figures(p, output, target))


def decisions(p, output):
    """Each item's class index, decided as the task says (argmax; one logit over 0)."""
    return output.argmax(-1) if p.task == "multiclass" else (output.reshape(-1) > 0).long()


def figures(p, output, target):
    """p.metrics as scikit-learn computes them on all of an epoch's predictions."""
    if p.task == "regression":
        true = target.to(torch.float64).reshape(len(target), -1).numpy()
        pred = output.to(torch.float64).reshape(len(target), -1).numpy()
        scores = {"mae": sk.mean_absolute_error, "rmse": sk.root_mean_squared_error, "r2": sk.r2_score}
        return {m: float(scores[m](true, pred)) for m in p.metrics}
    true = (target.reshape(-1) > 0.5).long() if target.is_floating_point() else target.reshape(-1)
    pred = decisions(p, output)
    macro = dict(average="macro", zero_division=0)
    scores = {"accuracy": lambda: sk.accuracy_score(true, pred),
              "f1": lambda: sk.f1_score(true, pred, **macro),
              "precision": lambda: sk.precision_score(true, pred, **macro),
              "recall": lambda: sk.recall_score(true, pred, **macro),
              "confusion": lambda: sk.confusion_matrix(true, pred, labels=list(range(max(p.classes, 2)))).tolist()}
    return {m: scores[m]() for m in p.metrics}


def _decided(p, d, output):
    """predict's `prediction` per row (a class name, or the output's values) and the classes' probabilities."""
    if p.task == "regression":
        return output.reshape(len(output), -1).tolist(), None
    names = [d.class_names[i] for i in decisions(p, output).tolist()]
    if p.task == "multiclass":
        return names, torch.softmax(output.float(), dim=1).tolist()
    score = torch.sigmoid(output.reshape(-1).float())
    return names, torch.stack([1 - score, score], dim=1).tolist()
