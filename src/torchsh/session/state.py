"""The values that fill an object built from its recipe (recipe.py): state_tensors and load_state.

Tensors (value, grad), models (state_dict and the parameters' grads), datasets' in-memory tensors, and
the non-tensor state of optimizers, schedulers and loaders (state_dict through classes/state.encode):
its JSON skeleton travels as UTF-8 bytes in a uint8 tensor under STATE_JSON, so one safetensors file
holds an object's whole state.
"""
import json

import torch
from torch.nn.parameter import is_lazy

from torchsh.classes import state as nested
from torchsh.data.loader import Loader
from torchsh.formats.stfile import live
from torchsh.session import datasets

STATE_JSON = "_state.json"


def state_tensors(obj, refs=None):
    """What safetensors holds for obj: its values (and grads), and its non-tensor state as JSON bytes.
    Objects in refs are left out (each is saved under its own name)."""
    ids = {id(o) for o in (refs or {}).values()} - {id(obj)}
    if isinstance(obj, torch.Tensor):
        out = {"value": live(obj)} if has_data(obj) else {}   # a meta tensor is its shape alone
        if obj.is_leaf and obj.grad is not None and has_data(obj.grad):
            out["grad"] = live(obj.grad)
        return out
    if isinstance(obj, torch.nn.Module):
        out = {"model." + k: live(v) for k, v in obj.state_dict().items() if has_data(v)}
        out.update({"grad." + n: live(p.grad) for n, p in obj.named_parameters()
                    if p.grad is not None and has_data(p.grad)})
        return out
    if isinstance(obj, (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler, Loader)):
        tensors = {}
        skeleton = nested.encode(obj.state_dict(), "state", tensors)
        tensors[STATE_JSON] = _json_tensor(skeleton)
        if isinstance(obj, Loader) and id(obj.dataset) not in ids:
            tensors.update({"data." + k: v for k, v in datasets.tensors(obj.dataset, ids).items()})
        return tensors
    if isinstance(obj, torch.utils.data.Dataset):
        return datasets.tensors(obj, ids)
    return {}   # a distribution's parameters are in its recipe


def has_data(t):
    """False for what has a shape but no values: a meta tensor, a lazy module's uninitialized parameter."""
    return not (t.is_meta or is_lazy(t))


def load_state(obj, tensors):
    """Fill obj (built from its recipe) with the values state_tensors gave."""
    with torch.no_grad():
        if isinstance(obj, torch.Tensor):
            if "value" in tensors:
                obj.copy_(tensors["value"])
            obj.grad = tensors["grad"].to(obj.device) if "grad" in tensors else None
        elif isinstance(obj, torch.nn.Module):
            _load_module(obj, tensors)
        elif isinstance(obj, (torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler, Loader)):
            state = nested.decode(_tensor_json(tensors[STATE_JSON]), tensors)
            obj.load_state_dict(state)
            if isinstance(obj, Loader):
                datasets.load(obj.dataset, {k[5:]: tensors[k] for k in tensors if k.startswith("data.")})
        elif isinstance(obj, torch.utils.data.Dataset):
            datasets.load(obj, tensors)


def _load_module(m, tensors):
    weights = {k[6:]: tensors[k] for k in tensors if k.startswith("model.")}  # a session file reads each once
    if not all(has_data(t) for _, t in list(m.named_parameters()) + list(m.named_buffers())):
        m.load_state_dict(weights, strict=False)
    else:
        nested.load_model(m, weights, "saved state")
    for n, p in m.named_parameters():
        g = tensors.get("grad." + n)
        p.grad = g.to(device=p.device, dtype=p.dtype) if g is not None else None


def _json_tensor(value):
    return torch.frombuffer(bytearray(json.dumps(value, allow_nan=True).encode()), dtype=torch.uint8)


def _tensor_json(t):
    return json.loads(bytes(t.contiguous().numpy()).decode())
