"""What a model's output means, one row per task: how an output becomes a decision (a class, a label, a value),
how a target becomes the class it names, and the probabilities behind a decision.

    task         output per item      target per item           decision            probabilities
    regression   any                  the output's shape        the output itself   —
    multiclass   k scores (k > 1)     a class index (int)       argmax              softmax
    binary       one score            0 or 1 (float or int)     logit > 0           sigmoid (p of class 1)
                                                                (p > 0.5 when the
                                                                output is p itself)
    multilabel   k scores             k 0/1 labels              logit > 0 per label sigmoid per label

A binary model's one score is a logit when it was trained with binary_cross_entropy_with_logits (or
soft_margin_loss), a probability with binary_cross_entropy: `decision` says which ("logit>0", "p>0.5").
Metrics (train/metrics/epoch.py), `predict` and `serve` all decide through these rows, so the same output gives
the same class everywhere.
"""
import torch

from torchsh.errors import TorchshError


class Task:
    name = None
    classifies = False

    def predicted(self, output):
        """Each item's decided class index, int64 [N] (multilabel: [N, k] of 0/1)."""
        raise NotImplementedError

    def actual(self, target):
        """Each item's true class index, int64, shaped as predicted()'s."""
        raise NotImplementedError

    def class_count(self, output):
        raise NotImplementedError

    def proba(self, output):
        """[N, C] probabilities of each class (multilabel: of each label)."""
        raise NotImplementedError


def _rows(t):
    return t.shape[0] if t.dim() else 1


class Multiclass(Task):
    name, classifies, decision = "multiclass", True, "argmax"

    def predicted(self, output):
        return output.argmax(-1).reshape(-1)

    def actual(self, target):
        return target.reshape(-1).long()

    def class_count(self, output):
        return output.shape[-1]

    def proba(self, output):
        return torch.softmax(output.reshape(_rows(output), -1).float(), dim=1)


class Binary(Task):
    """One score per item: a logit (decision logit>0) or a probability (p>0.5)."""
    name, classifies = "binary", True

    def __init__(self, decision="logit>0"):
        self.decision = decision

    def predicted(self, output):
        score = output.reshape(-1)
        return (score > (0 if self.decision == "logit>0" else 0.5)).long()

    def actual(self, target):
        target = target.reshape(-1)
        if target.is_floating_point():
            return (target > 0.5).long()  # 0./1. labels (soft labels decide at one half)
        return target.long()

    def class_count(self, output):
        return 2

    def proba(self, output):
        score = output.reshape(-1).float()
        p = torch.sigmoid(score) if self.decision == "logit>0" else score
        return torch.stack([1 - p, p], dim=1)


class Multilabel(Task):
    """k independent 0/1 labels per item; metrics over labels as sklearn's subset accuracy and micro scores."""
    name, classifies = "multilabel", True

    def __init__(self, decision="logit>0"):
        self.decision = decision

    def predicted(self, output):
        return (output.reshape(_rows(output), -1) > (0 if self.decision == "logit>0" else 0.5)).long()

    def actual(self, target):
        target = target.reshape(_rows(target), -1)
        return (target > 0.5).long() if target.is_floating_point() else target.long()

    def class_count(self, output):
        return 2

    def proba(self, output):
        score = output.reshape(_rows(output), -1).float()
        return torch.sigmoid(score) if self.decision == "logit>0" else score


class Regression(Task):
    name, classifies, decision = "regression", False, "identity"


MULTICLASS, REGRESSION = Multiclass(), Regression()
LOGIT_LOSSES = ("binary_cross_entropy_with_logits", "soft_margin_loss")
PROBABILITY_LOSSES = ("binary_cross_entropy",)
CLASS_INDEX_LOSSES = ("cross_entropy", "nll_loss", "multi_margin_loss")
REGRESSION_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "poisson_nll_loss",
                     "gaussian_nll_loss")


def named(name, decision=None):
    """The task row of a card's `task` and `decision` (None for an unknown task)."""
    if name == "multiclass":
        return MULTICLASS
    if name == "binary":
        return Binary(decision or "logit>0")
    if name == "multilabel":
        return Multilabel(decision or "logit>0")
    if name == "regression":
        return REGRESSION
    return None


def infer(loss, output_shape, target_shape):
    """The task a loss trains, from one item's output and target shapes (lists), or None when it says none."""
    out_numel, target_numel = _numel(output_shape), _numel(target_shape)
    if loss in CLASS_INDEX_LOSSES:
        return MULTICLASS if out_numel > 1 and target_numel == 1 else None
    if loss in LOGIT_LOSSES + PROBABILITY_LOSSES:
        decision = "logit>0" if loss in LOGIT_LOSSES else "p>0.5"
        if out_numel == 1 and target_numel == 1:
            return Binary(decision)
        return Multilabel(decision) if out_numel == target_numel else None
    if loss in REGRESSION_LOSSES:
        return REGRESSION
    return None


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def refuse_unclassified(metric, task):
    raise TorchshError("bad_argument", "--metrics %s scores classes, and this model's task is %s"
                       % (metric, task.name), "mae, rmse and r2 score a regression")
