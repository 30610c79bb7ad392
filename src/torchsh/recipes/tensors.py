"""A held tensor's persistence: shape, dtype, device and requires_grad as its recipe; its value and grad
as its state. A tensor with a graph comes back detached (a leaf), as the recipe's `graph` says."""
import torch
from torch.nn.parameter import is_lazy

from torchsh.formats.stfile import live
from torchsh.recipes.base import Persistence, has_data, not_portable
from torchsh.vocab import DTYPES, dtype_name


def capture(t, walk):
    if is_lazy(t):
        raise not_portable("an uninitialized parameter of a lazy module has no shape or values yet",
                           "run the module once (`torch forward`), or save the module itself")
    return {"kind": "tensor", "shape": list(t.shape), "dtype": dtype_name(t.dtype), "device": str(t.device),
            "requires_grad": t.requires_grad, "graph": t.grad_fn is not None}


def build(rec, walk):
    t = torch.empty(rec["shape"], dtype=DTYPES[rec["dtype"]], device=rec["device"])
    return t.requires_grad_(rec["requires_grad"] and not rec.get("graph"))  # a graph comes back detached


def state(t, skip):
    out = {"value": live(t)} if has_data(t) else {}   # a meta tensor is its shape alone
    if t.is_leaf and t.grad is not None and has_data(t.grad):
        out["grad"] = live(t.grad)
    return out


def load(t, values):
    if "value" in values:
        t.copy_(values["value"])
    t.grad = values["grad"].to(t.device) if "grad" in values else None


def inline(t, walk):
    """A tensor inside another object's recipe, not taken along: its values as JSON."""
    t = t.detach()
    return {"tensor": t.cpu().tolist(), "dtype": dtype_name(t.dtype), "device": str(t.device)}


def adopt(rec, values, walk):
    """The value read from a session becomes the tensor (an empty tensor filled from the value held the biggest
    tensor of a session twice while it loaded); built and filled when there is none to adopt."""
    value = values["value"] if "value" in values else None
    like = build(dict(rec, device="meta"), walk)  # shape and dtype, nothing allocated
    if value is None or value.shape != like.shape or value.dtype != like.dtype:
        value, t = None, build(rec, walk)
        with torch.no_grad():
            load(t, values)
        return t
    with torch.no_grad():
        t = value.to(rec["device"]).requires_grad_(like.requires_grad)
    t.grad = values["grad"].to(t.device) if "grad" in values else None
    return t


TENSOR = Persistence(capture, build, state, load, inline=inline, adopt=adopt)
