"""Values as the history log keeps them: a held object as ("h", HANDLE), a tensor no handle names as ("t", a
copy), dtypes and devices by name, a module's constructor as ("ctor", class, values), lists and literals as
they are; what reads them back (handles_in) and prints them (plain)."""
import torch


def plain(value):
    """An encoded value as JSON: a handle as its text, a tensor literal as its shape, a dtype as its name."""
    if isinstance(value, tuple) and value and value[0] in ("h", "dtype", "device", "opaque"):
        return value[1]
    if isinstance(value, tuple) and value and value[0] == "t":
        return "tensor%s" % list(value[1].shape)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def encode(value, registry):
    """A bound value as the log keeps it: held objects as ("h", handle), tensors no handle names as
    ("t", a copy), dtypes and devices by name, lists item by item, literals as they are."""
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, str) and "://" in value and registry.holds(value):
            return ("h", value.strip())
        return value
    handle = registry.handle_of(value)
    if handle is not None:
        return ("h", handle)
    if isinstance(value, torch.Tensor):
        return ("t", value.detach().clone())
    if isinstance(value, (list, tuple)):
        return [encode(v, registry) for v in value]
    if isinstance(value, torch.dtype):
        return ("dtype", str(value).replace("torch.", ""))
    if isinstance(value, torch.device):
        return ("device", str(value))
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: encode(v, registry) for k, v in value.items()}
    return ("opaque", repr(value)[:200])


def literal_bytes(args):
    total = 0
    for v in args.values():
        if isinstance(v, tuple) and v and v[0] == "t":
            total += v[1].numel() * v[1].element_size()
        elif isinstance(v, list):
            total += literal_bytes(dict(enumerate(v)))
    return total


def handles_in(value):
    """Every handle an encoded value names."""
    if isinstance(value, tuple) and value and value[0] == "h":
        return [value[1]]
    if isinstance(value, list):
        return [h for v in value for h in handles_in(v)]
    if isinstance(value, dict):
        return [h for v in value.values() for h in handles_in(v)]
    return []
