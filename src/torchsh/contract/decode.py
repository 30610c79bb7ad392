"""A model's outputs read the way its card says: the task row that decides (tasks.py), the class names.

`predict` (its table), `serve` (V2's `prediction` output) and fit's metrics decide through task_of(), so one
output gives one answer everywhere. A model without a task in its card (built and trained by hand, or fit
before cards had tasks) is read as before: k > 1 outputs and classes known, or an integer target, make a
multiclass model (argmax); one output is a regression's value.
"""
import torch

from torchsh.contract import tasks
from torchsh.errors import TorchshError


def task_of(card, output=None, classes=None, target=None):
    """The task row for a model of CARD whose OUTPUT (a batch) is read; classes: the names known."""
    task = tasks.named(card.get("task"), card.get("decision"))
    if task is not None:
        return task
    if output is None:
        return None
    if output.dim() > 2:
        raise TorchshError("shape_mismatch", "one row per item needs an output per item of one value or k "
                           "scores, and this model's is %s" % list(output.shape[1:]),
                           "end the model with one value or k class scores")
    width = output.shape[1] if output.dim() == 2 else 1
    if classes:
        return tasks.MULTICLASS if width > 1 or len(classes) == 1 else tasks.Binary()
    if width == 1:
        return tasks.REGRESSION
    floating = target is not None and (target.is_floating_point() or target.is_complex())
    return tasks.REGRESSION if floating else tasks.MULTICLASS


def class_names(card, task, output, classes=None):
    """The names of the classes TASK decides among (indices as text where none are known)."""
    classes = card.get("classes") or classes
    count = output.reshape(output.shape[0], -1).shape[1] if task.name == "multilabel" else task.class_count(output)
    if classes:
        if len(classes) != count:
            raise TorchshError("shape_mismatch", "the model gives %s per item for %d classes (%s)"
                               % (_width_words(task, output), len(classes), ", ".join(map(str, classes[:5]))),
                               "predict with the model trained on these classes")
        return [str(c) for c in classes]
    return [str(j) for j in range(count)]


def decided(task, names, output):
    """Each item's decision: a class name (multilabel: the names of its labels that are on, joined by |)."""
    predicted = task.predicted(output)
    if task.name == "multilabel":
        return ["|".join(n for n, on in zip(names, row) if on) for row in predicted.tolist()]
    return [names[i] for i in predicted.tolist()]


def _width_words(task, output):
    width = output.shape[1] if output.dim() == 2 else 1
    return "%d value%s" % (width, "" if width == 1 else "s")
