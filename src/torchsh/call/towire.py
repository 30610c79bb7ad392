"""A result's wire form, the one both faces write: new objects registered (in the caller's scope) as handles,
named tuples (PyTorch's structseq returns too) as objects of their fields, torch sizes, dtypes and devices as
JSON values, a result that makes its own JSON form (formats/rowsfile.Rows) as that, everything else as JSON.
The result types themselves are torchsh/results.py's."""
import torch

from torchsh.registry.kinds import kind_of
from torchsh.results import Binary, LateJson, Text
from torchsh.vocab import dtype_name


def to_wire(result, ctx):
    """Register objects and return a JSON-able value (handles as strings)."""
    kind = kind_of(result)
    if kind:
        return ctx.put(result, kind)
    if isinstance(result, (Text, Binary, LateJson)):
        return result
    if callable(getattr(result, "wire_form", None)):  # a result that makes its JSON form (formats/rowsfile.Rows)
        return result.wire_form()
    if isinstance(result, torch.Size):
        return list(result)
    if isinstance(result, torch.dtype):
        return dtype_name(result)
    if isinstance(result, torch.device):
        return str(result)
    fields = _field_names(result)
    if fields:
        return {f: to_wire(getattr(result, f), ctx) for f in fields}
    if isinstance(result, (list, tuple)):
        return [to_wire(x, ctx) for x in result]
    if isinstance(result, dict):
        return {str(k): to_wire(v, ctx) for k, v in result.items()}
    if isinstance(result, (bool, int, str)) or result is None:
        return result
    if isinstance(result, float):
        return result
    if isinstance(result, complex):
        return [result.real, result.imag]
    return str(result)


def _field_names(result):
    """Field names of a named tuple or of PyTorch's structseq returns (torch.return_types.max)."""
    if not isinstance(result, tuple):
        return None
    if hasattr(result, "_fields"):
        return result._fields
    if hasattr(result, "n_fields"):
        return tuple(getattr(result, "__match_args__", ()))
    return None
