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

With --compile the forward+loss and the optimizer step run through torch.compile (train/compiled/steps.py),
compiled at the first step of a model and input shape and reused by later commands; not bit-exact with the
eager step (docs/training.md#compile has the drift measured).

With --autocast bf16|fp16 the forward and loss run under torch.autocast(device_type, dtype), the
backward outside it, as PyTorch's recipe. train_step keeps no GradScaler between steps: for fp16 on
CUDA, where small gradients underflow, use `torch fit --autocast fp16`, which does.
"""
import contextlib

import torch

from torchsh import memory
from torchsh.errors import TorchshError, bad_argument
from torchsh.history import verbforms
from torchsh.results import JsonText
from torchsh.train.compiled import cache as compilecache, steps as compiled
from torchsh.train.loss.functions import loss_function, loss_options
from torchsh.verbs import verb
from torchsh.verbs.optim import number_text


@verb("train_step(Module model, Optimizer optimizer, Tensor input, Tensor target, *, str loss=\"mse_loss\", "
      "Json? loss_args=None, float? clip=None, Scheduler? sched=None, str? autocast=None, bool compile=False) -> Scalar", category="optim",
      writes=("model", "optimizer", "input", "target", "loss_args", "sched"), form=verbforms.train_step,
      examples=("m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
                "torch train_step $m $o $(torch randn 8 2) $(torch randn 8 1)",))
def train_step(ctx, model, optimizer, input, target, loss="mse_loss", loss_args=None, clip=None, sched=None,
               autocast=None, compile=False):
    """zero_grad, forward, loss, backward, [clip], step, [scheduler step] in one request; prints the loss.

    --loss_args takes the loss's options as JSON, e.g. '{"label_smoothing": 0.1}'; a tensor option (weight,
    pos_weight) a list of numbers or a tensor handle: '{"weight": [1.0, 3.0]}'.

    Args:
        autocast: bf16 or fp16: forward and loss under torch.autocast on the model's device
        compile: run the forward+loss and the optimizer step compiled (torch.compile; needs a C++ compiler)
    """
    fn = loss_function(loss)
    _autocast(model, autocast)  # a bad --autocast is refused before any change
    memory.admit_first_step(ctx, optimizer, backward=True)  # its state and the gradients, refused before a change
    options = loss_options(loss_args, loss, model, ctx.registry)  # weight, pos_weight: tensors on its device
    if options:
        ctx.noted = {"loss_args": options}  # as it ran: `history --python` writes these tensors
    params = [p for g in optimizer.param_groups for p in g["params"]] if clip is not None else None
    forward, opt_step = _steps(ctx, model, optimizer, fn, options, input, target, autocast) if compile else (
        lambda: fn(model(input), target, **options), optimizer.step)

    def closure():
        optimizer.zero_grad()
        # a training step records a graph even inside a no-grad block; with grad already on, as it
        # mostly is, enable_grad would cost ~2 µs of a 65 µs tiny step for nothing
        with contextlib.nullcontext() if torch.is_grad_enabled() else torch.enable_grad():
            with _autocast(model, autocast):
                value = forward()
            value.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        return value

    if isinstance(optimizer, torch.optim.LBFGS):
        value = optimizer.step(closure)
    else:
        value = closure()
        opt_step()
    if sched is not None:
        plateau = isinstance(sched, torch.optim.lr_scheduler.ReduceLROnPlateau)
        sched.step(value.item()) if plateau else sched.step()
    return JsonText(number_text(value))  # item() reads a value that requires grad as it is


def _steps(ctx, model, optimizer, fn, options, input, target, autocast):
    """--compile's (forward+loss, optimizer step), refused before anything compiles where it cannot run."""
    if isinstance(optimizer, torch.optim.LBFGS) or autocast is not None:
        raise TorchshError("not_supported", "--compile does not go with %s" % (
            "LBFGS (its step re-evaluates a closure)" if autocast is None else "--autocast"),
            "drop --compile, or use another optimizer" if autocast is None else "drop --compile or --autocast")
    folder = compilecache.folder_for(ctx.app.socket_path)
    compilecache.prepare(folder)
    forward = compiled.forward_loss(model, fn, options, (input,), target)
    return (lambda: forward(model, (input,), target)[1]), compiled.optimizer_step(optimizer)


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
