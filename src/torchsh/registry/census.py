"""Census rows for `torch tensors` and GET /v1/tensors, and the bytes the registry holds.

Reads the registry without the tensor lock (it only looks at metadata), so it answers while a
long op runs.
"""
import time

import torch
from torch.nn.parameter import is_lazy

from torchsh.vocab import dtype_name


def object_row(handle, entry, now=None):
    """One object's row. Every kind has `bytes`, an int: a tensor's data, a model's parameters and
    buffers, an optimizer's state tensors (momentum, Adam's moments), a scheduler's 0."""
    obj, now = entry.obj, now or time.time()
    row = {"handle": handle, "kind": entry.kind, "age_s": round(now - entry.created, 3), "scope": entry.scope}
    if entry.kind == "tensor" and is_lazy(obj):  # `nn parameters` of a lazy module: no shape or storage yet
        row.update(shape=None, dtype=dtype_name(obj.dtype), device=str(obj.device), bytes=0,
                   requires_grad=obj.requires_grad, uninitialized=True)
    elif entry.kind == "tensor":
        row.update(shape=list(obj.shape), dtype=dtype_name(obj.dtype), device=str(obj.device),
                   bytes=obj.nelement() * obj.element_size(), requires_grad=obj.requires_grad)
    elif entry.kind == "nn":
        params = list(obj.parameters())
        sized = [p for p in params if not is_lazy(p)]  # a lazy module's parameters have no shape until its first forward
        row.update(type=type(obj).__name__, parameters=sum(p.numel() for p in sized),
                   bytes=_tensor_bytes(sized + list(obj.buffers())),
                   device=str(params[0].device) if params else "cpu", training=obj.training)
        if len(sized) < len(params):
            row["uninitialized"] = len(params) - len(sized)
    elif entry.kind == "optim":
        # list(): a C-level copy under the GIL, so a step running meanwhile (it adds state) cannot
        # break the iteration; the census never waits for the tensor lock.
        states = list(obj.state.values())
        row.update(type=type(obj).__name__, bytes=_tensor_bytes(v for s in states for v in list(s.values())))
    else:
        row.update(type=type(obj).__name__, bytes=0)  # a scheduler holds numbers, no tensors
    return row


def _tensor_bytes(values):
    return sum(t.nelement() * t.element_size() for t in values
               if isinstance(t, torch.Tensor) and not t.is_meta and not is_lazy(t))


def census_rows(registry):
    now = time.time()
    return [object_row(h, e, now) for h, e in registry.items()]


def bytes_held(registry):
    """Bytes of distinct storages behind every handle (views and shared parameters counted once)."""
    seen, total = set(), 0
    for _, entry in registry.items():
        tensors = [entry.obj] if entry.kind == "tensor" else (
            list(entry.obj.parameters()) + list(entry.obj.buffers()) if entry.kind == "nn" else [])
        for t in tensors:
            if not isinstance(t, torch.Tensor) or t.is_meta or is_lazy(t):
                continue
            try:
                storage = t.untyped_storage()
            except (RuntimeError, NotImplementedError):
                continue
            key = (storage.data_ptr(), str(t.device))
            if key not in seen:
                seen.add(key)
                total += storage.nbytes()
    return total
