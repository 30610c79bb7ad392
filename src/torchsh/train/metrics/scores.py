"""The figures behind `torch fit --metrics` past accuracy: classification scores from a confusion matrix,
regression scores from per-column sums. Each is a running total (a flat tensor of numbers on the output's
device; a list in checkpoints, so ranks can sum theirs) that batches add to, and a figure read from the
epoch's total (as a list): sklearn's on the whole epoch.

Classification (precision, recall, f1, f1_micro, confusion): the prediction is decided as accuracy's, by the
model's task (contract/tasks.py: argmax of k scores, one logit > 0); the total is the C×C confusion matrix
(rows the target class, columns the predicted; C the output's last dimension, 2 for one logit), flattened. precision, recall and f1 are macro averages over
the classes that occur as a target or a prediction in the epoch (sklearn's labels); a class's score whose
denominator is 0 counts 0 (sklearn's zero_division default). f1_micro is true positives over predictions.
Regression (mae, rmse, r2): output and target as (samples, columns) float64; per column the sums of
|error|, error², target and target²; each figure is the mean over columns of the per-column figure
(sklearn's multioutput="uniform_average"); a column whose target does not vary has r2 1 when predicted
exactly, else 0 (sklearn's force_finite).
Language models (perplexity, tokens: `--loss lm`'s logits [B, T, V] and labels [B, T]): the summed next-token
negative log-likelihood and the number of tokens counted (labels -100 are not); perplexity is exp of the
epoch's NLL per token (not exp of the mean of batch means), tokens the count (fit's row adds tokens_per_s).
"""
import math

import torch
import torch.nn.functional as F

from torchsh.errors import bad_argument
from torchsh.train.loss.lm import IGNORE_INDEX
from torchsh.vocab import dtype_name


def add_parts(total, part):
    """TOTAL + PART, elementwise, as a tensor on PART's device (no copy to the host every batch); an empty
    total (nothing seen yet) takes PART's length, and a list (a checkpoint's) becomes a tensor."""
    if len(total) == 0:
        return part.clone()
    if len(total) != len(part):
        raise bad_argument("the outputs changed width between batches (%d then %d numbers to sum)"
                           % (len(total), len(part)))
    if not isinstance(total, torch.Tensor):
        total = torch.tensor(total, dtype=part.dtype, device=part.device)
    return total + part


def confusion_counts(name, output, target, task):
    """This batch's flattened C×C confusion matrix (C: the classes the task decides among)."""
    if task.name == "multilabel" or not task.classifies:
        raise bad_argument("%s scores one class per item, and this model is a %s one" % (name, task.name),
                           "accuracy scores a multilabel model; mae, rmse and r2 a regression")
    if task.name == "multiclass" and (target.is_floating_point() or target.is_complex()):
        raise bad_argument("%s needs class-index targets (integers), not %s" % (name, dtype_name(target.dtype)),
                           "mae, rmse and r2 score float targets")
    classes = task.class_count(output)
    predicted, target = task.predicted(output), task.actual(target)
    if predicted.shape != target.shape:
        raise bad_argument("%s: %d predictions for %d targets" % (name, predicted.numel(), target.numel()))
    if target.numel() and (target.min() < 0 or target.max() >= classes):
        raise bad_argument("%s: a target class is outside the output's %d classes" % (name, classes))
    return torch.bincount(target * classes + predicted, minlength=classes * classes)


def confusion_matrix(total):
    classes = math.isqrt(len(total))
    return [[int(v) for v in total[row * classes:(row + 1) * classes]] for row in range(classes)]


def _per_class(total):
    """(true positives, predicted, actual) for each class that occurs as a target or a prediction."""
    matrix = confusion_matrix(total)
    actual = [sum(row) for row in matrix]
    predicted = [sum(column) for column in zip(*matrix)]
    return [(matrix[c][c], predicted[c], actual[c]) for c in range(len(matrix)) if predicted[c] or actual[c]]


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def _macro(scores):
    return sum(scores) / len(scores) if scores else 0.0


def precision(total, samples):
    return _macro([_ratio(tp, predicted) for tp, predicted, _ in _per_class(total)])


def recall(total, samples):
    return _macro([_ratio(tp, actual) for tp, _, actual in _per_class(total)])


def f1(total, samples):
    return _macro([_ratio(2 * tp, predicted + actual) for tp, predicted, actual in _per_class(total)])


def f1_micro(total, samples):
    return _ratio(sum(tp for tp, _, _ in _per_class(total)), sum(total))  # over predictions: N×… targets count each


def confusion(total, samples):
    return confusion_matrix(total)


def regression_sums(name, output, target, task=None):
    """This batch's per-column sums: |error| for each column, then error², target, target²."""
    if output.numel() != target.numel():
        raise bad_argument("%s: %d outputs for %d targets" % (name, output.numel(), target.numel()),
                           "mae, rmse and r2 compare outputs and targets of one shape")
    rows = target.shape[0] if target.dim() else 1
    device = "cpu" if output.device.type == "mps" else output.device  # MPS has no float64
    out = output.detach().to(device, torch.float64).reshape(rows, -1)
    tgt = target.detach().to(device, torch.float64).reshape(rows, -1)
    error = out - tgt
    return torch.cat([error.abs().sum(0), (error * error).sum(0), tgt.sum(0), (tgt * tgt).sum(0)])


def _columns(total):
    width = len(total) // 4
    return list(zip(*(total[k * width:(k + 1) * width] for k in range(4))))


def mae(total, samples):
    return _macro([absolute / samples for absolute, _, _, _ in _columns(total)])


def rmse(total, samples):
    return _macro([math.sqrt(squared / samples) for _, squared, _, _ in _columns(total)])


def _r2_column(squared, target_sum, target_squares, samples):
    spread = target_squares - target_sum * target_sum / samples
    if spread <= 1e-12 * target_squares:  # a constant target, up to the rounding of the sums
        return 1.0 if squared == 0.0 else 0.0
    return 1.0 - squared / spread


def r2(total, samples):
    return _macro([_r2_column(squared, s, s2, samples) for _, squared, s, s2 in _columns(total)])


def token_sums(name, output, target, task=None):
    """This batch's summed next-token negative log-likelihood and its counted tokens, as float64."""
    if output.dim() != 3 or target.dim() != 2 or target.is_floating_point():
        raise bad_argument("%s scores a language model's logits [B, T, V] against labels [B, T], not %s against %s"
                           % (name, list(output.shape), list(target.shape)), "--loss lm's runs have perplexity and tokens")
    shifted = F.pad(target, (0, 1), value=IGNORE_INDEX)[..., 1:]
    nll = F.cross_entropy(output.detach().float().flatten(0, -2), shifted.flatten(), ignore_index=IGNORE_INDEX,
                          reduction="sum")
    return torch.stack([nll.double(), (shifted != IGNORE_INDEX).sum().double()])


def perplexity(total, samples):
    nll, count = total
    return math.exp(nll / count) if count else float("nan")


def tokens(total, samples):
    return int(total[1])
