"""Shell-friendly and peer-compatible names, one small table.

The peer is NuTorch (github.com/nutorch/nutorch, ops/src/lib.rs), the best-known shell front end to
LibTorch: every op name of its table must work here with its documented grammar. Most of its names
are PyTorch's own (`t`, `msort`, `topk`, `arange END --start S --step S`, `randint HIGH SHAPE --low L`
all bind through the ordinary schemas); only the names and flags below need a word.
"""
# alias -> (target op, fixed flags)
ALIASES = {
    "logsoftmax": ("nn.functional.log_softmax", {}),
    # bare names that several namespaces share: the one PyTorch documents for tensors in general
    "log_softmax": ("nn.functional.log_softmax", {}),  # not special.log_softmax
    # peer names of functions PyTorch deprecated or removed: the documented replacements
    "svd": ("linalg.svd", {"full_matrices": False}),  # reduced U, S, Vh (PyTorch's current convention)
    "solve": ("linalg.solve", {}),                    # torch.solve was removed in 1.9
    "norm": ("linalg.vector_norm", {}),               # torch.norm is deprecated; --p still works (below)
    "tolist": ("value", {}),                          # Tensor.tolist(): the data as (nested) lists
}
# peer flag spellings: resolved op -> {peer flag: (PyTorch flag, value map or None)}
FLAG_ALIASES = {
    "topk": {"smallest": ("largest", {True: False, False: True})},  # NuTorch's `topk --smallest`
    "linalg.vector_norm": {"p": ("ord", None)},                     # torch.norm's `p`
    "dist.sample": {"shape": ("sample_shape", None)},               # torchsh's own first spelling
    "dist.rsample": {"shape": ("sample_shape", None)},
}
# Tensor methods with no torch.* function that shell users (and the peer, and PyTorch users) expect as
# ops, typed by their ATen schemas. The dtype casts (float, long, bool…) are derived from their docstrings
# (from_torch.cast_aliases); tolist is `value` (above).
TENSOR_METHODS = ("repeat", "expand", "expand_as", "type_as", "view", "size", "dim", "cpu", "cuda")
# Tensor properties a PyTorch user types as words: t.T, t.mT, t.H, t.mH
TENSOR_PROPERTIES = ("T", "mT", "H", "mH")


def flag_alias(op_name, flag):
    """(PyTorch flag, value map or None) for a peer flag of an op, or None."""
    return FLAG_ALIASES.get(op_name, {}).get(flag)


def own_names(op_name, own, kwargs):
    """kwargs (the JSON face's, and so torch.nu's) with each peer flag that is not one of the op's `own`
    under the op's own name, its value mapped: `{"shape": [3]}` for dist.sample is its sample_shape."""
    peers = FLAG_ALIASES.get(op_name)
    if not peers or not any(k in peers and k not in own for k in kwargs):
        return kwargs
    out = {}
    for k, v in kwargs.items():
        if k in peers and k not in own:
            k, values = peers[k]
            v = values.get(v, v) if values and isinstance(v, bool) else v
        out[k] = v
    return out
