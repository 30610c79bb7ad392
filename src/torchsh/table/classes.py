"""The class tables behind `torch nn KIND`, `torch optim KIND` and `torch sched KIND`.

Each table maps the word users type (snake_case: conv2d, leaky_relu, adamw, cosine_annealing_lr)
to a PyTorch class, found by walking torch.nn, torch.optim and torch.optim.lr_scheduler, so a
class PyTorch adds shows up without a line here. What is left out, and why, is listed below.
"""
import inspect

import torch

from torchsh.table.signature import snake_case

# torch.nn classes that are not layers one builds by name: bases, containers with their own verb
# (`nn sequential`), wrappers that need several processes or devices, and deprecated aliases.
NOT_LAYERS = {"Module", "Container", "Sequential", "ModuleDict", "ParameterList", "ParameterDict",
              "RNNBase", "RNNCellBase", "DataParallel", "SyncBatchNorm", "NLLLoss2d"}

# RNN, LSTM and GRU take (*args, **kwargs); their arguments are RNNBase's, less `mode`.
SIGNATURE_OF = {"RNN": torch.nn.RNNBase, "LSTM": torch.nn.RNNBase, "GRU": torch.nn.RNNBase}
SIGNATURE_DROPS = {"RNN": ("mode",), "LSTM": ("mode",), "GRU": ("mode",)}

# Schedulers whose main argument is a Python function: nothing a shell word can be turned into
# without evaluating code, which the daemon never does.
NOT_SCHEDULERS = {"LRScheduler", "_LRScheduler", "LambdaLR", "MultiplicativeLR"}

# Short names from the issue and from common usage, next to the full snake_case ones.
SCHED_SHORT = {"cosine": "cosine_annealing_lr", "cosine_annealing": "cosine_annealing_lr",
               "warm_restarts": "cosine_annealing_warm_restarts", "exponential": "exponential_lr",
               "one_cycle": "one_cycle_lr", "linear": "linear_lr", "warmup": "linear_lr",
               "sequential": "sequential_lr", "plateau": "reduce_lr_on_plateau", "multi_step": "multi_step_lr",
               "constant": "constant_lr", "polynomial": "polynomial_lr", "cyclic": "cyclic_lr",
               "chained": "chained_scheduler"}


def _classes(module, base, skip):
    out = {}
    for name in dir(module):
        cls = getattr(module, name)
        if inspect.isclass(cls) and issubclass(cls, base) and name not in skip and not name.startswith("_"):
            out[name] = cls
    return out


def layers():
    """snake_case word -> torch.nn class, for every layer class in torch.nn."""
    return {snake_case(n): c for n, c in sorted(_classes(torch.nn, torch.nn.Module, NOT_LAYERS).items())}


def optimizers():
    """lowercase word -> torch.optim class: sgd, adam, adamw, rmsprop, adagrad, lbfgs, …"""
    found = _classes(torch.optim, torch.optim.Optimizer, {"Optimizer"})
    return {n.lower(): c for n, c in sorted(found.items())}


def schedulers():
    """snake_case word -> torch.optim.lr_scheduler class (ReduceLROnPlateau included)."""
    sched = torch.optim.lr_scheduler
    found = _classes(sched, sched.LRScheduler, NOT_SCHEDULERS)
    found.setdefault("ReduceLROnPlateau", sched.ReduceLROnPlateau)
    return {snake_case(n): c for n, c in sorted(found.items())}


def built_by(table, category, class_kind):
    """The rows of CATEGORY that build a class of CLASS_KIND (`torch nn KIND`'s: "nn"), by name: `torch nn list`,
    `optim list`, `sched list` and `dist list` list them."""
    return [op for op in sorted(table.in_category(category), key=lambda o: o.name) if op.class_kind == class_kind]


def constructor_text(op):
    """`Linear(in_features, out_features, …)`: the class a row builds, with its arguments."""
    return "%s(%s)" % (op.cls.__name__, op.overloads[0].params_text())
