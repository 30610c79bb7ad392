"""What `torch fit` settles about the model's contract before its first step, the same for a plain fit, a
sweep's trial and a distributed rank: the model's card learned from the training data (contract/learn.py),
the targets' view (train/loss/check.py), the task its metrics decide by, and how --val's raw rows are
preprocessed as the training rows were (contract/encode.py). The card is attached to the model when the
run's other checks pass (the caller attaches it), so run.json, checkpoints, `predict` and `serve` read what
this run trained."""
import torch

from torchsh.contract import encode, learn, tasks
from torchsh.errors import bad_argument
from torchsh.train.loss import check as losscheck, choice as losschoice

CLASS_METRICS = ("accuracy", "top5", "precision", "recall", "f1", "f1_micro", "confusion")
VALUE_METRICS = ("mae", "rmse", "r2")


def choose_loss(model, dataset, loss, target_dtype, notes):
    """(loss name, item 0, one item's output shape): --loss as given, or chosen where nothing else fits."""
    item = learn.sample(dataset)
    output_shape = learn.probe(model, item[0]) if item else None
    if loss is None:
        loss, why = losschoice.choose(model, item, target_dtype, output_shape)
        notes.append("--loss %s (%s)" % (loss, why))
    return loss, item, output_shape


def prepare(model, loader, val, loss, item, output_shape, target_dtype, metrics, notes):
    """(the model's card learned here, the plan's contract fields {target_shape, task, val_encode})."""
    shape, note = losscheck.target_shape(loss, item, output_shape, target_dtype, loader.dataset)  # shapes first:
    losschoice.check_target_dtype(loss, item, target_dtype)  # a dtype's fix is no fix where the head is wrong
    if note:
        notes.append(note)
    card = learn.learn(loader.dataset, loss, item, output_shape, target_dtype, shape)
    fields = plan_fields(card, val, shape)
    check_metrics(metrics, fields["task"])
    return card, fields


def with_loss_args(card, loss_args):
    """CARD with the loss's options as JSON (a class weight's tensor as its list): what `evaluate` scores with."""
    if not loss_args:
        return card
    return dict(card, loss_args={k: v.tolist() if isinstance(v, torch.Tensor) else v for k, v in loss_args.items()})


def plan_fields(card, val, target_shape):
    """{target_shape, task, val_encode} of a fit whose model has CARD (a rank rebuilds them from its model's)."""
    task = tasks.named(card.get("task"), card.get("decision"))
    return {"target_shape": tuple(target_shape) if target_shape is not None else None, "task": task,
            "val_encode": None if val is None else val_encoder(card, val.dataset)}


def val_encoder(card, dataset):
    """fields -> fields for --val's batches: None where they are preprocessed already (or need nothing)."""
    encoded = encode.dataset(card, dataset, "--val")
    if encoded is dataset:
        return None
    return lambda fields: encode.batch(card, fields)


def check_metrics(metrics, task):
    if task is None:
        return
    wrong = [m for m in metrics if (m in CLASS_METRICS and not task.classifies)
             or (m in VALUE_METRICS and task.classifies)]
    if wrong:
        fit = "accuracy, precision, recall, f1, confusion" if task.classifies else "mae, rmse, r2"
        raise bad_argument("--metrics %s: the model is a %s one (its loss and output say so)"
                           % (",".join(wrong), task.name), "a %s model is scored by %s" % (task.name, fit))
