"""Autograd from the shell: backward, grad, retain_grad, zero_grad, detach, requires_grad, is_leaf,
grad_fn, autograd_grad.

The graph lives in the daemon, attached to the tensors themselves, so a loss made by one `torch`
command can be back-propagated by another. These verbs are PyTorch's own calls (Tensor.backward,
torch.autograd.grad, ...) with the shell's errors in front: a non-scalar loss, a freed graph, a
gradient read before any backward each get one line that says what to do.
"""
import contextlib

import torch

from torchsh.errors import TorchshError
from torchsh.history import verbforms
from torchsh.verbs import verb
from torchsh.verbs.tensors import check_grad_dtype

_GRAPH_FREED = "backward through the graph a second time"


@verb("backward(Tensor loss, *, Tensor? gradient=None, bool? retain_graph=None, bool create_graph=False) -> None",
      category="autograd", writes=("grads",), form=verbforms.backward,
      examples=("x=$(torch tensor '[1.0,2.0]' --requires_grad); "
                "torch backward $(torch sum $(torch mul $x $x)) && torch grad $x",))
def backward(ctx, loss, gradient=None, retain_graph=None, create_graph=False):
    """Back-propagate from LOSS; gradients accumulate in the leaves' .grad until zero_grad.

    Needs a scalar loss unless --gradient G (dLoss) is given. A second backward through the same
    graph needs --retain_graph on the first one. Reads LOSS from stdin: `... | torch sum | torch backward`.
    """
    _check_differentiable(loss, "backward")
    if gradient is None:
        _check_scalar(loss, "backward")
    with _graph_errors():
        loss.backward(gradient=gradient, retain_graph=retain_graph, create_graph=create_graph)


@verb("grad(Tensor input) -> Tensor", category="autograd", form=verbforms.grad,
      examples=("x=$(torch tensor '[3.0]' --requires_grad); torch backward $(torch sum $(torch mul $x $x)); "
                "torch value $(torch grad $x)",), read_only=True)
def grad(ctx, input):
    """A snapshot copy of input's .grad as a new handle: later backwards do not change it."""
    g = input.grad
    if g is None:
        raise _no_grad_error(input)
    return g.clone()  # keeps the grad's own graph under --create_graph, so higher orders still work


def _no_grad_error(t):
    if not t.requires_grad:
        return TorchshError("autograd_error", "this tensor does not require grad, so it never gets one",
                            "make it with --requires_grad or run `torch requires_grad H true`")
    if not t.is_leaf and not t.retains_grad:
        return TorchshError("autograd_error",
                            "not a leaf (made by %s): PyTorch keeps .grad only for leaf tensors"
                            % type(t.grad_fn).__name__,
                            "run `torch retain_grad H` before backward to keep this one's gradient")
    return TorchshError("autograd_error", "no gradient yet: run backward first",
                        "`torch backward LOSS` fills the gradients of the leaves LOSS was made from")


@verb("retain_grad(Tensor input) -> None", category="autograd", writes=("input",),
      form=verbforms.method("retain_grad", "input"),
      examples=("x=$(torch tensor '[2.0]' --requires_grad); y=$(torch mul $x 3); torch retain_grad $y; "
                "torch backward $(torch sum $y); torch value $(torch grad $y)",))
def retain_grad(ctx, input):
    """Keep .grad for a non-leaf tensor at the next backward (leaves always keep theirs)."""
    if not input.requires_grad:
        raise TorchshError("autograd_error", "cannot retain_grad on a tensor that does not require grad",
                           "only tensors computed from ones that require grad have a gradient")
    input.retain_grad()


@verb("zero_grad(Handle[] handles, *, bool? set_to_none=None) -> None", category="autograd",
      writes=("handles",), form=verbforms.zero_grad,
      examples=("m=$(torch nn linear 2 1); torch backward $(torch sum $(torch forward $m $(torch ones 2))); "
                "torch zero_grad $m",))
def zero_grad(ctx, handles, set_to_none=None):
    """Reset gradients of tensors, modules and optimizers (reads handles from stdin too).

    Tensors: .grad becomes zeros (with --set_to_none: no gradient at all). Modules and
    optimizers: PyTorch's zero_grad, whose default is set_to_none=True.
    """
    objects = [_grad_owner(ctx, h) for h in handles]  # validate all before changing any
    for obj in objects:
        if isinstance(obj, torch.Tensor):
            _zero_tensor_grad(obj, bool(set_to_none))
        else:
            obj.zero_grad(set_to_none=True if set_to_none is None else set_to_none)


def _grad_owner(ctx, handle):
    return ctx.registry.get(handle, ("tensor", "nn", "optim"))


def _zero_tensor_grad(t, set_to_none):
    if t.grad is None:
        return
    if set_to_none:
        t.grad = None
        return
    # what torch.optim.Optimizer.zero_grad(set_to_none=False) does for each parameter
    if t.grad.grad_fn is not None:
        t.grad.detach_()
    else:
        t.grad.requires_grad_(False)
    t.grad.zero_()


@verb("detach(Tensor input) -> Tensor", category="autograd", form=verbforms.method("detach", "input"),
      examples=("torch requires_grad $(torch detach $(torch tensor '[1.0]' --requires_grad))",), read_only=True)
def detach(ctx, input):
    """A new handle for the same data, cut from the graph. Shares storage: in-place changes show in both.

    `torch clone` gives an independent copy.
    """
    return input.detach()


@verb("requires_grad(Handle target, bool? value=None) -> Json", category="autograd", writes=("target",),
      form=verbforms.requires_grad,
      examples=("x=$(torch zeros 2); torch requires_grad $x true && torch requires_grad $x",))
def requires_grad(ctx, target, value=None):
    """Print whether a tensor (or every parameter of a module) requires grad, or set it with true|false.

    Setting false freezes: later backwards leave its gradient alone. Only floating point and
    complex tensors can require grad; only leaves can be changed (detach a computed tensor instead).
    """
    obj = ctx.registry.get(target, ("tensor", "nn"))
    if isinstance(obj, torch.nn.Module):
        return _module_requires_grad(obj, value)
    if value is None:
        return obj.requires_grad
    if value:
        check_grad_dtype(obj)
    if not obj.is_leaf and not value:
        raise TorchshError("autograd_error", "only leaf tensors can change requires_grad; this one was made by %s"
                           % type(obj.grad_fn).__name__, "`torch detach H` gives a graph-free tensor")
    obj.requires_grad_(value)
    return None


def _module_requires_grad(module, value):
    params = dict(module.named_parameters())
    if value is None:
        flags = {name: p.requires_grad for name, p in params.items()}
        if all(flags.values()):
            return True
        if not any(flags.values()):
            return False
        return flags  # mixed: say which parameters are frozen
    module.requires_grad_(value)
    return None


@verb("is_leaf(Tensor input) -> bool", category="autograd",
      examples=("torch is_leaf $(torch tensor '[1.0]' --requires_grad)",), read_only=True)
def is_leaf(ctx, input):
    """true for tensors made by the user (or under no-grad), false for results of recorded ops."""
    return input.is_leaf


@verb("grad_fn(Tensor input) -> str", category="autograd",
      examples=("torch grad_fn $(torch mul $(torch tensor '[1.0]' --requires_grad) 2)",), read_only=True)
def grad_fn(ctx, input):
    """The name of the graph node that made input (MulBackward0, SumBackward0...); nothing for a leaf."""
    return None if input.grad_fn is None else type(input.grad_fn).__name__


@verb("autograd_grad(Tensor[] outputs, *, Tensor[] inputs, Tensor[]? grad_outputs=None, bool? retain_graph=None, "
      "bool create_graph=False, bool materialize_grads=False) -> Tensor[]", category="autograd",
      no_form="torch.autograd.grad is not written yet",
      examples=("x=$(torch tensor '[1.0,2.0]' --requires_grad); "
                "torch autograd_grad $(torch sum $(torch mul $x $x)) --inputs $x",))
def autograd_grad(ctx, outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
                  materialize_grads=False):
    """torch.autograd.grad: d(sum of OUTPUTS)/d(each of --inputs), one handle per input; .grad is untouched.

    --create_graph makes the results differentiable, so the gradient of a gradient works.
    --inputs takes every word up to the next flag.
    """
    for out in outputs:
        _check_differentiable(out, "autograd_grad")
        if grad_outputs is None:
            _check_scalar(out, "autograd_grad")
    with _graph_errors():
        return torch.autograd.grad(outputs, inputs, grad_outputs=grad_outputs, retain_graph=retain_graph,
                                   create_graph=create_graph, materialize_grads=materialize_grads)


def _check_differentiable(t, op):
    if not t.requires_grad:
        raise TorchshError("autograd_error", "this tensor does not require grad (%s found no graph to follow)" % op,
                           "make its inputs with --requires_grad, outside no_grad/inference_mode")


def _check_scalar(t, op):
    if t.numel() != 1:
        raise TorchshError("autograd_error", "%s needs a scalar loss, got shape %s — reduce first with sum or mean"
                           % (op, list(t.shape)), "or pass --gradient G with the loss's shape")


@contextlib.contextmanager
def _graph_errors():
    """Turn PyTorch's autograd RuntimeErrors into shell-sized messages with the fix."""
    try:
        yield
    except RuntimeError as e:
        text = str(e)
        if _GRAPH_FREED in text:
            raise TorchshError("autograd_error", "this graph was already used by a backward and freed",
                               "rebuild the graph (run the forward commands again) or pass --retain_graph "
                               "to the earlier backward") from None
        if "appears to not have been used in the graph" in text:
            raise TorchshError("autograd_error", "an input was not used to compute the outputs",
                               "pass --materialize_grads to get zeros for it") from None
        raise TorchshError("autograd_error", text.strip().split("\n")[0]) from None
