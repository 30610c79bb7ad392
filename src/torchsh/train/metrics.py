"""Epoch metrics of `torch fit --metrics`: sums over batches, divided by the samples seen.

accuracy: argmax over the last dimension equals the target (class indices). top5: the target is among
the 5 largest outputs. Train metrics come from the training forward passes; with --val the same
names prefixed `val_` come from the evaluation pass.
"""
import torch

from torchsh.errors import bad_argument


def _correct_top(k):
    def correct(output, target):
        top = output.topk(min(k, output.shape[-1]), dim=-1).indices
        return (top == target.unsqueeze(-1)).any(-1).sum().item()
    return correct


METRICS = {
    "accuracy": lambda output, target: (output.argmax(-1) == target).sum().item(),
    "top5": _correct_top(5),
}


def check(name):
    if name not in METRICS:
        raise bad_argument("unknown metric %r" % name, "metrics: %s" % " ".join(METRICS))


class EpochSums:
    """Running sums of one epoch: loss weighted by batch size, and each metric's correct count."""

    def __init__(self, names, state=None):
        self.names = tuple(names)
        state = state or {}
        self.samples = state.get("samples", 0)
        self.loss = state.get("loss", 0.0)
        self.correct = dict(state.get("correct", {n: 0 for n in self.names}))
        self.window = []  # the batch losses since the last optimizer step

    def add(self, loss_value, output, target):
        n = target.shape[0] if target.dim() else 1
        self.samples += n
        self.loss += loss_value * n
        self.window.append(loss_value)
        if self.names:
            with torch.no_grad():
                for name in self.names:
                    self.correct[name] += METRICS[name](output.detach(), target)

    def window_loss(self):
        """The mean loss of the batches of the optimizer step just taken (then a new window starts)."""
        mean = sum(self.window) / len(self.window) if self.window else float("nan")
        self.window = []
        return mean

    def row(self, prefix=""):
        if not self.samples:
            return {prefix + "loss": float("nan")}
        out = {prefix + "loss": self.loss / self.samples}
        out.update({prefix + n: self.correct[n] / self.samples for n in self.names})
        return out

    def state(self):
        return {"samples": self.samples, "loss": self.loss, "correct": dict(self.correct)}
