"""`torch evaluate MODEL LOADER [--metrics …]`: the model scored on data as fit's --val scores it
(src/torchsh/train/evaluate.py): its card's loss and task, raw rows preprocessed as in training."""
from torchsh.train import evaluate as evaluation
from torchsh.verbs import verb


class Scores(dict):
    """JSON under --json, through the API and in Nushell (a record); a `name value` line each on a terminal."""

    def text(self):
        return "".join("%s\t%s\n" % (k, v) for k, v in self.items())


@verb("evaluate(Module model, Loader loader, *, str? loss=None, Json? loss_args=None, str[]? metrics=None, "
      "ScalarType? target_dtype=None) -> Json", category="optim",
      examples=("m=$(torch nn linear 2 2); L=$(torch data loader $(torch data tensors $(torch randn 32 2) "
                "$(torch randint 0 2 '[32]')) --batch_size 8); torch fit $m $(torch optim sgd $m) $L "
                "--loss cross_entropy >/dev/null; torch evaluate $m $L --metrics accuracy,f1",))
def evaluate(ctx, model, loader, loss=None, loss_args=None, metrics=None, target_dtype=None):
    """Score MODEL over LOADER's batches (the rest of its epoch, or a whole one) in eval mode without grad, as
    `fit --val` does: the mean loss and --metrics over all of them.

    The model's card (`torch model card M`) says how: its loss, its task (a binary model's classes by logit > 0),
    and its preprocessing (raw rows standardized with the training statistics; rows standardized with others
    are refused). The figures equal fit's val_ figures for the same weights and batches.

    Args:
        loss: the loss (default: the one the model was trained with, from its card, with its options)
        loss_args: the loss's options as JSON, e.g. '{"label_smoothing": 0.1}' (a tensor option: a list or a handle)
        metrics: accuracy, top5, precision, recall, f1, f1_micro, confusion, mae, rmse, r2 (as fit's)
        target_dtype: the targets' dtype for the loss, y.to(dtype)
    """
    return Scores(evaluation.run(model, loader, loss, loss_args, tuple(metrics or ()), target_dtype, ctx.registry))
