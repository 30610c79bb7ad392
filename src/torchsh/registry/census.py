"""Census rows for `torch tensors` and GET /v1/tensors, and the bytes the registry holds.

Reads the registry without the tensor lock (it only looks at metadata), so it answers while a
long op runs. Each kind's own fields come from its row (registry/kinds.py).
"""
import logging
import time

import torch
from torch.nn.parameter import is_lazy

from torchsh.registry.kinds import HANDLE_KINDS

log = logging.getLogger("torchd")


def object_row(handle, entry, now=None):
    """One object's row. Every kind has `bytes`, an int: a tensor's data, a model's parameters and
    buffers, an optimizer's state tensors (momentum, Adam's moments), a scheduler's 0."""
    now = now or time.time()
    row = {"handle": handle, "kind": entry.kind, "age_s": round(now - entry.created, 3), "scope": entry.scope}
    try:
        row.update(HANDLE_KINDS[entry.kind].census(entry.obj))
    except Exception as e:  # one odd object must not take the census (and `torch free`'s sweep) down with it
        log.warning("census: %s: %s: %s", handle, type(e).__name__, e)
        row.update(type=type(entry.obj).__name__, bytes=0, unreadable="%s: %s" % (type(e).__name__, e))
    return row


def census_rows(registry):
    now, named = time.time(), {}
    registry.expire_names()
    for name, entry in registry.names.matching():
        named.setdefault(entry.handle, []).append(name)
    return [dict(object_row(h, e, now), names=named.get(h, [])) for h, e in registry.items()]


def bytes_held(registry):
    """Bytes of distinct storages behind every handle (views and shared parameters counted once)."""
    seen, total = set(), 0
    for _, entry in registry.items():
        for t in HANDLE_KINDS[entry.kind].storages(entry.obj):
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
