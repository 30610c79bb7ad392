"""serve/batcher.py's pure parts: the eval mode a batch runs in, and the modes put back after it."""
import torch

from torchsh.serve import batcher


def test_a_batch_runs_in_eval_mode_and_puts_each_modules_mode_back():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(), torch.nn.BatchNorm1d(2))
    model[2].eval()  # a frozen BatchNorm stays frozen after the batch; the rest train again
    put_back = batcher.evaluating(model)
    assert not any(m.training for m in model.modules())
    put_back()
    assert [m.training for m in model.modules()] == [True, True, True, False]


class OwnTrain(torch.nn.Module):
    """A module whose train() does more than set the flag: it must be called, not bypassed."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def train(self, mode=True):
        self.calls.append(mode)
        return super().train(mode)


def test_a_model_with_its_own_train_gets_eval_and_train_called():
    model = OwnTrain()
    batcher.evaluating(model)()
    assert model.calls == [False, True] and model.training
