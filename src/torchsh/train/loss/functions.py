"""Losses by name, as `torch train_step --loss`, `torch fit --loss` and `torch sweep --loss` take them:
torch.nn.functional's losses and their options (--loss_args, a JSON object).

A loss's tensor options (the parameters after input and target that its signature types as Tensor: weight,
pos_weight, gaussian_nll_loss's var) take a JSON list of numbers, made a tensor in the model's parameters'
dtype on their device (`torch.tensor([1.0, 2.0], dtype=…)`), or a tensor handle, moved to that device
(`w.to(device)`), so `--loss_args '{"weight": [1.0, 3.0]}'` trains as PyTorch's loop with that tensor does.
"""
import functools
import inspect
import json

import torch
import torch.nn.functional as F

from torchsh.call.tokens import loads
from torchsh.errors import TorchshError, bad_argument
from torchsh.train.loss import lm as lm_loss


def loss_function(name):
    """A torch.nn.functional loss by name: mse_loss, cross_entropy, nll_loss, l1_loss, huber_loss, …; or `lm`,
    a causal language model's next-token loss (lm.py)."""
    if name == "lm":
        return lm_loss.lm
    fn = getattr(F, name, None)
    if fn is None or not _is_loss(name):
        raise bad_argument("unknown loss %r" % name, "losses: %s" % " ".join(loss_names()))
    return fn


def loss_names():
    """The losses --loss names (TAB offers them too: shells/complete.py)."""
    return sorted([n for n in dir(F) if _is_loss(n)] + ["lm"])


def _is_loss(name):
    return not name.startswith("_") and ("loss" in name or "entropy" in name or name == "kl_div")


def loss_options(loss_args, loss=None, model=None, registry=None):
    """--loss_args as keyword arguments: None is none, a JSON object's text (or the object) its items. With
    LOSS (a name): each option one LOSS takes, its tensor options tensors on MODEL's device (registry: where
    their handles are looked up)."""
    if loss_args is None:
        return {}
    if isinstance(loss_args, str):
        try:
            loss_args = loads(loss_args)
        except ValueError:
            loss_args = None
    if not isinstance(loss_args, dict):
        raise bad_argument("--loss_args takes a JSON object", "'{\"reduction\": \"sum\"}'")
    if loss is None:
        return loss_args
    options, tensors = _options(loss)
    unknown = [k for k in loss_args if options is not None and k not in options]
    if unknown:
        raise bad_argument("--loss_args %s: %s takes no such option" % (unknown[0], loss),
                           "its options: %s" % ", ".join(options))
    return {k: _tensor(loss, k, v, model, registry) if k in tensors else v for k, v in loss_args.items()}


@functools.lru_cache(maxsize=None)
def _options(loss):
    """(the options LOSS takes after input and target, or None when its signature does not say; its tensor ones)."""
    try:
        params = list(inspect.signature(loss_function(loss)).parameters.values())[2:]
    except (TypeError, ValueError):
        return None, ()
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None, ()
    return tuple(p.name for p in params), tuple(p.name for p in params if "Tensor" in str(p.annotation))


def _tensor(loss, name, value, model, registry):
    """A tensor option on the model's device: a list of numbers in its parameters' dtype, or a handle's tensor."""
    param = next((p for p in model.parameters() if p.is_floating_point()), None) if model is not None else None
    device = param.device if param is not None else torch.device("cpu")
    if isinstance(value, str) and registry is not None:
        try:
            return registry.get(value, "tensor").to(device)
        except TorchshError as e:
            e.message = "--loss_args %s: %s" % (name, e.message)
            raise
    if isinstance(value, list) and _numbers(value):
        try:
            return torch.tensor(value, dtype=param.dtype if param is not None else None, device=device)
        except (ValueError, TypeError, RuntimeError):
            pass  # ragged: said below
    if isinstance(value, (int, float)) and not isinstance(value, bool) and name == "var":
        return value  # gaussian_nll_loss's var takes a number too
    raise bad_argument("--loss_args %s: %s's %s is a tensor: give a list of numbers or a tensor handle, not %s"
                       % (name, loss, name, _shown(value)),
                       "'{\"%s\": [1.0, 2.0]}', or a handle: '{\"%s\": \"tensor://…\"}'" % (name, name))


def on_device(options, device):
    """Loss options whose tensors are on DEVICE (a rank's: its options come from the daemon's, on the CPU)."""
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in options.items()}


def as_json(options):
    """Loss options as JSON text, a tensor as {"dtype", "values"}: what run.json's hyperparameters show, and
    a key that tells two weights apart (str() of a tensor elides its values past a thousand)."""
    return json.dumps(options, sort_keys=True, default=lambda v: {"dtype": str(v.dtype).replace("torch.", ""),
                                                                  "values": v.tolist()}
                      if isinstance(v, torch.Tensor) else str(v))


def _numbers(value):
    """A (nested) list whose leaves are all numbers (bools are no class weights)."""
    return all(_numbers(v) if isinstance(v, list) else isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in value)


def _shown(value):
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def same_value(a, b):
    """Two plans' values the same (sweep trials trained together): dicts item by item, tensors by value (== of
    two tensors is no bool: --loss_args' weight)."""
    if a is b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
                and (a.dtype, a.device) == (b.dtype, b.device))
    return a == b
