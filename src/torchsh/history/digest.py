"""The sha256 of an object's tensors, computed the same way by the daemon and by the script it writes
(`torch history --python` copies digest()'s source into the script, so the two can never differ).

Nothing but torch and the standard library: the script imports no torchsh.
"""


def digest(obj):
    """sha256 over an object's tensors, in order, each with its name, dtype, shape and bytes: a tensor (and
    its .grad), a module's state_dict and its parameters' grads, an optimizer's state_dict."""
    import ctypes
    import hashlib
    import torch
    h = hashlib.sha256()

    def tensor(name, t):
        t = t.detach().cpu().contiguous()
        h.update(("%s %s %s\n" % (name, t.dtype, list(t.shape))).encode())
        h.update(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()) if t.numel() else b"")

    def walk(name, v):
        if isinstance(v, torch.Tensor):
            tensor(name, v)
        elif isinstance(v, dict):
            for k in sorted(v, key=str):
                walk("%s.%s" % (name, k), v[k])
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk("%s.%d" % (name, i), x)

    if isinstance(obj, torch.Tensor):
        walk("tensor", obj)
        if obj.is_leaf or obj.retains_grad:  # only these keep a .grad (reading another's warns)
            walk("grad", obj.grad)
    elif isinstance(obj, torch.nn.Module):
        walk("model", obj.state_dict())
        walk("grad", {n: p.grad for n, p in obj.named_parameters() if p.grad is not None})
    elif isinstance(obj, torch.optim.Optimizer):
        walk("optim", obj.state_dict()["state"])
    return h.hexdigest()
