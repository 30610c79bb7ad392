"""Losses by name, as `torch train_step --loss` and `torch fit --loss` take them: torch.nn.functional's
losses and their options (--loss_args, a JSON object)."""
import torch.nn.functional as F

from torchsh.call.tokens import loads
from torchsh.errors import bad_argument


def loss_function(name):
    """A torch.nn.functional loss by name: mse_loss, cross_entropy, nll_loss, l1_loss, huber_loss, …"""
    fn = getattr(F, name, None)
    if fn is None or not _is_loss(name):
        raise bad_argument("unknown loss %r" % name, "losses: %s" % " ".join(loss_names()))
    return fn


def loss_names():
    """The losses --loss names (TAB offers them too: shells/complete.py)."""
    return sorted(n for n in dir(F) if _is_loss(n))


def _is_loss(name):
    return not name.startswith("_") and ("loss" in name or "entropy" in name or name == "kl_div")


def loss_options(loss_args):
    """--loss_args as keyword arguments: None is none, a JSON object's text (or the object) its items."""
    if loss_args is None:
        return {}
    if isinstance(loss_args, str):
        try:
            loss_args = loads(loss_args)
        except ValueError:
            loss_args = None
    if not isinstance(loss_args, dict):
        raise bad_argument("--loss_args takes a JSON object", "'{\"reduction\": \"sum\"}'")
    return loss_args
