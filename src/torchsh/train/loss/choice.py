"""`torch fit` without --loss: the loss is chosen only where the model's head and the targets leave no doubt,
and a loss given (or chosen) is checked against the targets' dtype before anything trains.

The rule, on the model's head (the last layer of nested Sequentials; the model itself otherwise) and the
dataset's item 0 (inputs…, target), the target after --target_dtype:
- a Linear head with k > 1 outputs, a 1-D input item and an integer target of shape [] (a class index):
  cross_entropy (classification, as torch.nn.CrossEntropyLoss takes it);
- a Linear head and a floating target of exactly the output's shape (the input item's shape with its last
  dimension k): mse_loss (regression);
- anything else (another head, a [1] output against [] targets, 0/1 labels, an empty dataset): no choice;
  --loss is required, and the refusal names the likely ones for the targets' dtype and the head's width
  (integer targets and one output: a regression or a binary classifier, never cross_entropy).
A class-index loss (cross_entropy, nll_loss, multi_margin_loss) with floating targets of shape [], or a
regression loss with integer targets, is refused at once (dtype_error) with the --target_dtype that fixes it.
"""
import torch

from torchsh.errors import TorchshError
from torchsh.vocab import dtype_name

CLASS_INDEX_LOSSES = ("cross_entropy", "nll_loss", "multi_margin_loss")
FLOAT_TARGET_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                       "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss", "poisson_nll_loss",
                       "gaussian_nll_loss")


def head(model):
    """The layer that makes the model's output: the last of nested Sequentials."""
    while isinstance(model, torch.nn.Sequential) and len(model):
        model = model[-1]
    return model


def choose(model, item, target_dtype=None, output_shape=None):
    """(loss name, why) when the head and item 0 make it unambiguous; else missing_argument naming --loss.
    output_shape: one item's output (contract/learn.probe), for the hint."""
    found = item and _unambiguous(head(model), item[0], item[1].to(target_dtype or item[1].dtype))
    if found:
        return found
    raise TorchshError("missing_argument", "--loss is needed: the model's last layer (%s) and the targets%s do "
                       "not say which loss" % (type(head(model)).__name__, _described(item, target_dtype)),
                       "likely: %s" % _likely(item, target_dtype, output_shape))


def _likely(item, target_dtype, output_shape=None):
    width = None if output_shape is None else int(torch.Size(output_shape).numel())
    if item and _is_index(item[1], target_dtype) and width == 1:
        return ("--loss mse_loss --target_dtype float32 (the integers are values), or --loss "
                "binary_cross_entropy_with_logits --target_dtype float32 (0/1 labels, one logit)")
    if item and _is_index(item[1], target_dtype):
        return "--loss cross_entropy (class indices: a head of one output per class), --loss nll_loss"
    if item and item[1].dim() == 0:
        return ("--loss mse_loss (values), --loss binary_cross_entropy_with_logits (0/1 labels), or --loss "
                "cross_entropy --target_dtype int64 (class indices)")
    return "--loss mse_loss, --loss l1_loss, --loss cross_entropy"


def _unambiguous(last, inputs, target):
    if not isinstance(last, torch.nn.Linear) or len(inputs) != 1:
        return None
    out_shape = tuple(inputs[0].shape[:-1]) + (last.out_features,)
    if _is_index(target) and last.out_features > 1 and inputs[0].dim() == 1:
        return "cross_entropy", "%s class targets, a Linear head of %d outputs" % (dtype_name(target.dtype),
                                                                                  last.out_features)
    if target.is_floating_point() and tuple(target.shape) == out_shape:
        return "mse_loss", "%s targets shaped as the Linear head's output %s" % (dtype_name(target.dtype),
                                                                              list(out_shape))
    return None


def check_target_dtype(loss, item, target_dtype=None):
    """A class-index loss with floating class indices, or a regression loss with integer targets: dtype_error
    naming the --target_dtype that fixes it (PyTorch's own message names neither the cause nor the fix)."""
    if not item:
        return
    target = item[1]
    dtype = target_dtype or target.dtype
    if loss in CLASS_INDEX_LOSSES and target.dim() == 0 and dtype.is_floating_point:
        raise TorchshError("dtype_error", "--loss %s takes class indices as int64, but the targets are %s"
                           % (loss, dtype_name(dtype)), "add --target_dtype int64")
    if loss in FLOAT_TARGET_LOSSES and not dtype.is_floating_point and not dtype.is_complex:
        raise TorchshError("dtype_error", "--loss %s takes floating targets, but the targets are %s"
                           % (loss, dtype_name(dtype)), "add --target_dtype float32, or use --loss cross_entropy "
                           "for class indices")


def _is_index(target, target_dtype=None):
    dtype = target_dtype or target.dtype
    return target.dim() == 0 and not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def _described(item, target_dtype):
    if not item:
        return ""
    target = item[1]
    return " (%s, shape %s)" % (dtype_name(target_dtype or target.dtype), list(target.shape))
