"""`--loss lm`: a causal language model's loss, as transformers computes it (ForCausalLMLoss): the logits
[B, T, V] of each position against the next position's label (labels shifted left by one), labels -100 not
counted (padding; the prompt with --train_on completions), cross_entropy in float32, the mean over the
counted tokens. A batch is (input_ids, labels), both [B, T]; `torch data open … --format chat` makes them.

SCRIPT is the same loss as one line of the script `torch history --python` writes (history/fitloop.py), so a
LoRA fit's losses there equal the daemon's bit for bit.
"""
import torch.nn.functional as F

from torchsh.errors import TorchshError

IGNORE_INDEX = -100
SCRIPT = ("torch.nn.functional.cross_entropy({logits}.float().flatten(0, -2), "
          "torch.nn.functional.pad({labels}, (0, 1), value=-100)[..., 1:].flatten(), ignore_index=-100)")


def lm(logits, labels, ignore_index=IGNORE_INDEX):
    """The mean next-token cross_entropy of logits [B, T, V] against labels [B, T] (ignore_index not counted)."""
    shifted = F.pad(labels, (0, 1), value=ignore_index)[..., 1:]
    return F.cross_entropy(logits.float().flatten(0, -2), shifted.flatten(), ignore_index=ignore_index)


def check(output_shape, target):
    """fit's check before the first step: one item's logits [T, V] and labels [T] of the same length."""
    if output_shape is None:
        return
    labels = list(target.shape)
    if len(output_shape) != 2 or labels != output_shape[:1] or target.dtype.is_floating_point:
        raise TorchshError("shape_mismatch", "--loss lm takes logits [T, V] and integer labels [T] per item, and "
                           "the model gives %s for labels %s %s" % (list(output_shape), labels,
                                                                   str(target.dtype).replace("torch.", "")),
                           "a language model's adapter (`torch lm lora`) over `torch data open FILE.jsonl "
                           "--format chat --tokenizer LM` items")

