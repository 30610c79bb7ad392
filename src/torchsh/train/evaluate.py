"""`torch evaluate MODEL LOADER`: one pass of fit's --val, on its own. The model in eval mode without grad
over the loader's batches (the rest of its epoch, or a whole one), its inputs through the model's card (raw
rows standardized as in training: contract/encode.py), the targets as fit took them (fit's --target_dtype, which
the card keeps as the target's dtype, or evaluate's own; the view train/loss/check.py chose), the loss the card
names (or --loss) and the metrics decided by the card's task.
The figures equal fit's val_ ones for the same weights and batches, bit for bit."""
import torch

from torchsh.contract import card as cards, learn
from torchsh.errors import TorchshError
from torchsh.train import fitcard
from torchsh.train.loss import check as losscheck, choice as losschoice
from torchsh.train.loss.functions import loss_function, loss_options
from torchsh.train.metrics.epoch import EpochSums, check
from torchsh.train.plan import on_device
from torchsh.vocab import DTYPES


def run(model, loader, loss, loss_args, metrics, target_dtype, registry=None):
    """The figures {loss, METRIC…} of one pass, as fit's val_ row (without the prefix). loss_args: --loss_args as
    given (JSON), or None: the card's when the loss is the card's."""
    for name in metrics:
        check(name)
    card = cards.of_model(model)
    if loss is None and loss_args is None:
        loss_args = card.get("loss_args")
    loss = loss or card.get("loss")
    target_dtype = target_dtype or _trained_target_dtype(card, loss)
    if loss is None:
        raise TorchshError("missing_argument", "--loss is needed: the model's card names none (no `torch fit` "
                           "trained it)", "e.g. --loss cross_entropy, or --loss mse_loss")
    item = learn.sample(loader.dataset)
    shape, _ = losscheck.target_shape(loss, item, learn.probe(model, item[0]) if item else None, target_dtype,
                                      loader.dataset)
    losschoice.check_target_dtype(loss, item, target_dtype)
    fields = fitcard.plan_fields(card, loader, shape)
    fitcard.check_metrics(metrics, fields["task"])
    loss_args = loss_options(loss_args, loss, model, registry)
    fn, sums = loss_function(loss), EpochSums(metrics, task=fields["task"])
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            while (batch := loader.next_batch()) is not None:
                *inputs, target = on_device(batch, device, target_dtype, fields["target_shape"])
                if fields["val_encode"] is not None:
                    inputs = fields["val_encode"](inputs)
                output = model(*inputs)
                sums.add(fn(output, target, **loss_args).item(), output, target)
    finally:
        model.train(was_training)
    return sums.row()


def _trained_target_dtype(card, loss):
    """The dtype fit's loss took the targets in (the card's target dtype: `fit --target_dtype float32` of 0/1 labels
    read as int64), when evaluate scores with that loss; None otherwise: the data's own."""
    name = (card.get("target") or {}).get("dtype") if loss == card.get("loss") else None
    return DTYPES.get(name)
