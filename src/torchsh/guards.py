"""Inputs that make a PyTorch kernel or constructor run for ever, refused before the op runs.

A running kernel cannot be interrupted, and it runs under the one tensor lock: a hang there wedges
every shell, which is worse than any error. Each row names what PyTorch does without it (seen on
2.13 CPU, found by tests/fuzz). Memory-sized outputs are torchsh.memory's business, not this table's.
Called by cli/run.invoke with the op's converted argument values, before the memory budget.
"""
import torch

from torchsh.errors import TorchshError

MAX_LAYERS = 10_000  # a stack deeper than this is no model anyone trains from a shell


def _finite_count(values):
    count = values.get("count")
    if not isinstance(count, torch.Tensor) or count.device.type == "meta":  # a meta tensor holds no values
        return None
    if count.is_floating_point() and bool(torch.isnan(count).any()):
        return "count holds NaN: PyTorch's binomial sampler never returns for it"
    return None


def _layer_counts(values):
    for name, value in values.items():
        if name.startswith("num_") and name.endswith("layers") and isinstance(value, int) and value > MAX_LAYERS:
            return "%s=%d: more than %d layers (PyTorch would build them one by one)" % (name, value, MAX_LAYERS)
    return None


# op name -> check(values) -> problem text or None
GUARDS = {
    "binomial": _finite_count,
    "nn.lstm": _layer_counts,
    "nn.gru": _layer_counts,
    "nn.rnn": _layer_counts,
    "nn.transformer": _layer_counts,
    "nn.transformer_encoder": _layer_counts,
    "nn.transformer_decoder": _layer_counts,
}


def check(op_name, values):
    guard = GUARDS.get(op_name)
    problem = guard(values) if guard is not None else None
    if problem:
        raise TorchshError("bad_argument", problem, "these inputs would hang the daemon for every shell")
