"""Each task decides as a PyTorch user writes it by hand: argmax, logit > 0, p > 0.5, every label."""
import torch

from torchsh.contract import tasks


def test_multiclass_decides_by_argmax_and_gives_softmax():
    out = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.0]])
    assert tasks.MULTICLASS.predicted(out).tolist() == [1, 0]
    assert torch.equal(tasks.MULTICLASS.proba(out), torch.softmax(out, dim=1))


def test_binary_decides_a_logit_at_zero_and_a_probability_at_one_half():
    logits = torch.tensor([[-0.5], [0.0], [2.0]])
    assert tasks.Binary("logit>0").predicted(logits).tolist() == [0, 0, 1]
    assert tasks.Binary("p>0.5").predicted(torch.tensor([0.2, 0.5, 0.9])).tolist() == [0, 0, 1]
    p = torch.sigmoid(logits.reshape(-1))
    assert torch.equal(tasks.Binary().proba(logits), torch.stack([1 - p, p], 1))
    assert tasks.Binary().actual(torch.tensor([0.0, 1.0, 1.0])).tolist() == [0, 1, 1]


def test_multilabel_decides_every_label():
    out = torch.tensor([[1.0, -1.0], [-2.0, 3.0]])
    assert tasks.Multilabel().predicted(out).tolist() == [[1, 0], [0, 1]]


def test_the_task_a_loss_trains_follows_from_the_shapes():
    assert tasks.infer("cross_entropy", [3], []).name == "multiclass"
    assert tasks.infer("cross_entropy", [1], []) is None
    assert tasks.infer("binary_cross_entropy_with_logits", [1], []).name == "binary"
    assert tasks.infer("binary_cross_entropy", [], []).decision == "p>0.5"
    assert tasks.infer("binary_cross_entropy_with_logits", [4], [4]).name == "multilabel"
    assert tasks.infer("mse_loss", [2], [2]) is tasks.REGRESSION
    assert tasks.infer("cosine_embedding_loss", [2], [2]) is None
