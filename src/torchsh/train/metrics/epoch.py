"""Epoch metrics of `torch fit --metrics`: totals over the epoch's batches, read once at its end.

accuracy: the decided class equals the target's, decided as the model's card says (contract/tasks.py:
argmax of k scores; one logit > 0 for a binary model; every label for a multilabel one, sklearn's subset
accuracy). top5: the target is among the 5 largest of k scores. precision, recall, f1, f1_micro, confusion
(the same decisions), mae, rmse, r2, and a language model's perplexity and tokens: scores.py. Every figure is the whole epoch's (never a mean of per-batch
figures). Train metrics come from the training forward passes; with --val the same names prefixed `val_`
come from the evaluation pass. A model without a task is read as k class scores (argmax).
"""
import torch

from torchsh.contract import tasks
from torchsh.errors import bad_argument
from torchsh.train.metrics import scores


def _correct_top(k):
    def correct(output, target, task):
        if task.name != "multiclass":
            raise bad_argument("top%d ranks k class scores, and this model is %s" % (k, task.name),
                               "accuracy scores its decisions")
        top = output.topk(min(k, output.shape[-1]), dim=-1).indices
        return (top == target.unsqueeze(-1)).any(-1).sum().item()
    return correct


def _correct(output, target, task):
    if not task.classifies:
        tasks.refuse_unclassified("accuracy", task)
    hit = task.predicted(output) == task.actual(target)
    return (hit.all(-1) if hit.dim() > 1 else hit).sum().item()


class Count:
    """A metric whose total is a number of correct samples; the figure is its share of the samples."""
    empty = 0

    def __init__(self, correct):
        self.correct = correct

    def add(self, name, total, output, target, parts, task):
        return total + self.correct(output, target, task)

    def figure(self, total, samples):
        return total / samples


class Summed:
    """A metric whose total is a flat tensor of sums (scores.py), read into a figure at the epoch's end;
    the metrics sharing a part (the confusion counts, the regression sums) compute it once a batch."""
    empty = ()

    def __init__(self, part, figure):
        self.part, self.figure = part, figure

    def add(self, name, total, output, target, parts, task):
        if self.part not in parts:
            parts[self.part] = self.part(name, output, target, task)
        return scores.add_parts(total, parts[self.part])


METRICS = {
    "accuracy": Count(_correct),
    "top5": Count(_correct_top(5)),
    **{name: Summed(scores.confusion_counts, getattr(scores, name))
       for name in ("precision", "recall", "f1", "f1_micro", "confusion")},
    **{name: Summed(scores.regression_sums, getattr(scores, name)) for name in ("mae", "rmse", "r2")},
    **{name: Summed(scores.token_sums, getattr(scores, name)) for name in ("perplexity", "tokens")},
}
LOWER_IS_BETTER = ("loss", "mae", "rmse", "perplexity")
NOT_A_NUMBER = ("confusion",)  # a matrix: logged, never monitored


def check(name):
    if name not in METRICS:
        raise bad_argument("unknown metric %r" % name, "metrics: %s" % " ".join(METRICS))


class EpochSums:
    """Running sums of one epoch: loss weighted by batch size, and each metric's total (a count or a list)."""

    def __init__(self, names, state=None, task=None):
        self.names = tuple(names)
        self.task = task or tasks.MULTICLASS  # how outputs are decided (the model's card)
        state = state or {}
        self.samples = state.get("samples", 0)
        self.loss = state.get("loss", 0.0)
        self.correct = dict(state.get("correct", {n: METRICS[n].empty for n in self.names}))
        self.window = []  # the batch losses since the last optimizer step

    def add(self, loss_value, output, target):
        n = target.shape[0] if target.dim() else 1
        self.samples += n
        self.loss += loss_value * n
        self.window.append(loss_value)
        if self.names:
            parts = {}
            with torch.no_grad():
                for name in self.names:
                    self.correct[name] = METRICS[name].add(name, self.correct[name], output.detach(), target, parts,
                                                           self.task)

    def window_loss(self):
        """The mean loss of the batches of the optimizer step just taken (then a new window starts)."""
        mean = sum(self.window) / len(self.window) if self.window else float("nan")
        self.window = []
        return mean

    def row(self, prefix=""):
        if not self.samples:
            return {prefix + "loss": float("nan")}
        out = {prefix + "loss": self.loss / self.samples}
        totals = self.totals()
        out.update({prefix + n: METRICS[n].figure(totals[n], self.samples) for n in self.names})
        return out

    def totals(self):
        """The metrics' totals as numbers and lists (the tensors copied to the host once)."""
        return {n: t.tolist() if isinstance(t, torch.Tensor) else t for n, t in self.correct.items()}

    def state(self):
        return {"samples": self.samples, "loss": self.loss, "correct": self.totals()}


def total_sizes(names, correct):
    """How many numbers each metric's total holds (a count holds 1; an untouched list total 0)."""
    return [len(correct[n]) if isinstance(METRICS[n], Summed) else 1 for n in names]


def flat_totals(names, correct, sizes):
    """The totals as one list of numbers, each list total padded with zeros to SIZES (for summing over ranks)."""
    flat = []
    for name, size in zip(names, sizes):
        total = correct[name]
        flat += list(total) + [0] * (size - len(total)) if isinstance(METRICS[name], Summed) else [total]
    return flat


def totals_from_flat(names, flat, sizes):
    correct, at = {}, 0
    for name, size in zip(names, sizes):
        part = flat[at:at + size]
        correct[name] = part if isinstance(METRICS[name], Summed) else int(part[0])
        at += size
    return correct
