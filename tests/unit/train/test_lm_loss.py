"""--loss lm is transformers' causal LM loss (ForCausalLMLoss) bit for bit, padding (-100) not counted."""
import torch

from torchsh.lm import library
from torchsh.train.loss import functions, lm


def test_the_lm_loss_equals_transformers_causal_lm_loss_with_ignored_labels():
    loss_utils = library.transformers().loss.loss_utils
    torch.manual_seed(0)
    logits = torch.randn(3, 7, 11)
    labels = torch.randint(0, 11, (3, 7))
    labels[0, 4:] = -100
    labels[2, :3] = -100
    assert torch.equal(functions.loss_function("lm")(logits, labels),
                       loss_utils.ForCausalLMLoss(logits, labels, vocab_size=11))
    assert "lm" in functions.loss_names()


def test_the_script_form_of_the_lm_loss_computes_the_same_value():
    torch.manual_seed(1)
    logits, labels = torch.randn(2, 5, 9), torch.randint(0, 9, (2, 5))
    labels[1, 3:] = -100
    written = eval(lm.SCRIPT.format(logits="logits", labels="labels"), {"torch": torch, "logits": logits, "labels": labels})
    assert torch.equal(written, lm.lm(logits, labels))
