"""Before `torch fit` trains: what PyTorch would only warn about, or fail on deep inside the first step, is
refused here with the fix, or reconciled where the intent leaves no doubt (docs/training.md#shapes).
--loss lm takes logits [T, V] and labels [T] per item (lm.py checks them).

On item 0 of the training data and the model's output for it (contract/learn.probe):
- an elementwise loss (mse_loss, l1_loss, binary_cross_entropy_with_logits, …) whose output and target
  differ only by dimensions of size 1 (a head of one output, [N, 1], against a column of targets, [N]): the
  target is viewed as the output's shape, y.view(N, *shape), and stderr says so. Left alone, mse_loss would
  broadcast [N, 1] against [N] into [N, N] and train every output toward the batch's mean (PyTorch only warns);
  binary_cross_entropy_with_logits would raise.
- an elementwise loss whose output and target have other shapes (3 outputs for 1 target): refused.
- a class-index loss (cross_entropy, nll_loss, multi_margin_loss) on a head of one output: its loss is 0
  whatever the weights (the softmax of one score is 1): refused, naming the binary loss; on a head of k
  outputs with class targets at or past k (a regression's integer target, `Target 151 is out of bounds` in
  the first step), or classes known that are not k: refused.
"""
import torch

from torchsh.contract import tasks
from torchsh.data.datasets import FileDataset, TensorField, known, wrapped_datasets
from torchsh.errors import TorchshError
from torchsh.train.loss import lm as lm_loss

ELEMENTWISE_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                      "binary_cross_entropy_with_logits", "soft_margin_loss", "poisson_nll_loss")


def target_shape(loss, item, output_shape, target_dtype, dataset):
    """(the per-item shape targets are viewed as, or None to leave them as they are; a note for stderr or None)."""
    if item is None or output_shape is None:
        return None, None
    target = item[1]
    given = list(target.shape)
    if loss == "lm":
        lm_loss.check(output_shape, target)
        return None, None
    if loss in tasks.CLASS_INDEX_LOSSES:
        _check_class_targets(loss, output_shape, dataset, target_dtype or target.dtype)
        return None, None
    if loss not in ELEMENTWISE_LOSSES or given == list(output_shape):
        return None, None
    if _squeezed(given) == _squeezed(output_shape):
        return tuple(output_shape), ("targets of shape %s per item are viewed as the output's %s for --loss %s "
                                     "(y.view(N, %s)); left as they are, they would broadcast against it"
                                     % (given, list(output_shape), loss, ", ".join(map(str, output_shape))))
    dtype = target_dtype or target.dtype
    classes = not given and not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
    raise TorchshError("shape_mismatch", "--loss %s compares each output with its target elementwise, and the "
                       "model gives %s per item for targets of %s" % (loss, list(output_shape), given),
                       "integer targets for %s scores are class indices: --loss cross_entropy" % _numel(output_shape)
                       if classes else "end the model with as many outputs as each target has values (%s)"
                       % _numel(given))


def _check_class_targets(loss, output_shape, dataset, dtype):
    width = _numel(output_shape)
    if width == 1:
        raise TorchshError("shape_mismatch", "--loss %s on a head of one output is 0 whatever the weights (the "
                           "softmax of one score is 1)" % loss,
                           "for two classes with one logit: --loss binary_cross_entropy_with_logits --target_dtype "
                           "float32; for values: --loss mse_loss --target_dtype float32; or a head of one output "
                           "per class")
    classes = known(dataset, "classes")
    if classes and len(classes) != width:
        raise TorchshError("shape_mismatch", "the data has %d classes (%s), and the model gives %d scores per item"
                           % (len(classes), ", ".join(map(str, list(classes)[:5])), width),
                           "end the model with one output per class (%d)" % len(classes))
    top = _largest_target(dataset)
    if top is not None and not dtype.is_floating_point and top >= width:
        raise TorchshError("shape_mismatch", "the targets go up to %d, and --loss %s takes class indices below the "
                           "head's %d outputs" % (top, loss, width),
                           "for values (a regression): --loss mse_loss --target_dtype float32 on a head of one "
                           "output; for classes: one output per class (%d)" % (top + 1))


def _largest_target(dataset):
    """The largest target of an in-memory table (its last field), or None where finding it means reading it."""
    for d in wrapped_datasets(dataset):
        if isinstance(d, FileDataset) and d.fields and isinstance(d.fields[-1], TensorField):
            t = d.fields[-1].tensor
            if t.numel() and not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool):
                return int(t.max())
            return None
    return None


def _squeezed(shape):
    return [d for d in shape if d != 1]


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n
