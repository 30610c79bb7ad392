"""The fused training step: `torch train_step M OPT --loss mse_loss X Y [--clip N] [--sched S]`.

One request does what the five-command loop does in five:

    optimizer.zero_grad()                      # grads set to None (PyTorch's default)
    loss = F.<loss>(model(X), Y, **loss_args)  # forward and loss, graph recorded
    loss.backward()
    clip_grad_norm_(params, clip)              # only with --clip
    optimizer.step()                           # LBFGS: step(closure) re-evaluates the loss
    scheduler.step()                           # only with --sched (ReduceLROnPlateau: step(loss))

and prints the loss as a plain number (shortest text of its float32 value), keeping no tensors:
Clorch's canonical loop. The result equals the separate commands bit for bit.

With --autocast bf16|fp16 the forward and loss run under torch.autocast(device_type, dtype), the
backward outside it, as PyTorch's recipe. train_step keeps no GradScaler between steps: for fp16 on
CUDA, where small gradients underflow, use `torch fit --autocast fp16`, which does.
"""
import contextlib

import torch
import torch.nn.functional as F

from torchsh.call.results import JsonText
from torchsh.errors import bad_argument
from torchsh.verbs import verb
from torchsh.verbs.optim import number_text


def loss_function(name):
    """A torch.nn.functional loss by name: mse_loss, cross_entropy, nll_loss, l1_loss, huber_loss, …"""
    fn = getattr(F, name, None)
    if fn is None or name.startswith("_") or not ("loss" in name or "entropy" in name or name == "kl_div"):
        raise bad_argument("unknown loss %r" % name, "losses: %s" % " ".join(loss_names()))
    return fn


def loss_names():
    """The losses --loss names (TAB offers them too: shells/complete.py)."""
    return sorted(n for n in dir(F) if not n.startswith("_") and ("loss" in n or "entropy" in n or n == "kl_div"))


@verb("train_step(Module model, Optimizer optimizer, Tensor input, Tensor target, *, str loss=\"mse_loss\", "
      "Json? loss_args=None, float? clip=None, Scheduler? sched=None, str? autocast=None) -> Scalar", category="optim",
      examples=("m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
                "torch train_step $m $o $(torch randn 8 2) $(torch randn 8 1)",))
def train_step(ctx, model, optimizer, input, target, loss="mse_loss", loss_args=None, clip=None, sched=None,
               autocast=None):
    """zero_grad, forward, loss, backward, [clip], step, [scheduler step] in one request; prints the loss.

    --loss_args takes the loss's options as JSON, e.g. '{"label_smoothing": 0.1}'.

    Args:
        autocast: bf16 or fp16: forward and loss under torch.autocast on the model's device
    """
    fn = loss_function(loss)
    _autocast(model, autocast)  # a bad --autocast is refused before any change
    options = _loss_options(loss_args)
    params = [p for g in optimizer.param_groups for p in g["params"]] if clip is not None else None

    def closure():
        optimizer.zero_grad()
        # a training step records a graph even inside a no-grad block; with grad already on, as it
        # mostly is, enable_grad would cost ~2 µs of a 65 µs tiny step for nothing
        with contextlib.nullcontext() if torch.is_grad_enabled() else torch.enable_grad():
            with _autocast(model, autocast):
                value = fn(model(input), target, **options)
            value.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        return value

    if isinstance(optimizer, torch.optim.LBFGS):
        value = optimizer.step(closure)
    else:
        value = closure()
        optimizer.step()
    if sched is not None:
        plateau = isinstance(sched, torch.optim.lr_scheduler.ReduceLROnPlateau)
        sched.step(value.item()) if plateau else sched.step()
    return JsonText(number_text(value))  # item() reads a value that requires grad as it is


def _autocast(model, name):
    """torch.autocast on the model's device for --autocast bf16|fp16; without it a null context (even a
    disabled torch.autocast costs ~10 µs a step to build)."""
    if name is None:
        return contextlib.nullcontext()
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    if name not in dtypes:
        raise bad_argument("--autocast takes bf16 or fp16, not %r" % name)
    param = next(model.parameters(), None)
    device_type = param.device.type if param is not None else "cpu"
    return torch.autocast(device_type, dtype=dtypes[name])


def _loss_options(loss_args):
    if loss_args is None:
        return {}
    if isinstance(loss_args, str):
        from torchsh.call.tokens import loads
        try:
            loss_args = loads(loss_args)
        except ValueError:
            loss_args = None
    if not isinstance(loss_args, dict):
        raise bad_argument("--loss_args takes a JSON object", "'{\"reduction\": \"sum\"}'")
    return loss_args
