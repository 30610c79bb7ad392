"""Inputs that make a PyTorch kernel or constructor run for ever, refused before the op runs.

A running kernel cannot be interrupted, and it runs under the one tensor lock: a hang there wedges
every shell, which is worse than any error. Each row names what PyTorch does without it (seen on
2.13 CPU, found by tests/fuzz and the MCP fuzz). Memory-sized outputs are torchsh.memory's business, not
this table's. A guard gives the problem's text (a hang: bad_argument), or the error itself when PyTorch
would refuse the inputs anyway, only slowly.
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


def _meshgrid_ranks(values):
    for t in values.get("tensors") or ():
        if isinstance(t, torch.Tensor) and t.dim() > 1:
            # PyTorch refuses it too, but prints the whole tensor into its message first (51 s for 10^8 zeros)
            return TorchshError("shape_mismatch", "torch.meshgrid: expected 0-D or 1-D tensors, got a %d-D tensor "
                                "of shape %s" % (t.dim(), list(t.shape)), "flatten it first: `torch flatten T`")
    return None


# op name -> check(values) -> problem text (a hang), a TorchshError (a slow refusal), or None
GUARDS = {
    "meshgrid": _meshgrid_ranks,
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
    if isinstance(problem, TorchshError):
        raise problem
    if problem:
        raise TorchshError("bad_argument", problem, "these inputs would hang the daemon for every shell")
