"""The datasets' part of recipes: what `data open|split|transform|tensors` made, read back from the objects.

A dataset is a chain the verbs built: FileDataset (fields over files, or in memory), Subset (a split:
its indices), TransformedDataset (steps) and TensorDataset (held tensors). Each is written as JSON;
in-memory tensors (a csv's columns, a TensorDataset's tensors not taken along) are state, saved by
`tensors` under a path (`fields.0`, `dataset.tensors.1`) and copied back by `load` into the placeholders
`build` made. A memory-mapped .npy, a .safetensors or an image folder is recorded by its path: the file
is read again where the recipe is built (the same machine for a session; the files must be there).
"""
import torch
import torch.utils.data

from torchsh.data import transforms
from torchsh.data.datasets import FileDataset, NpyField, SafetensorsField, TensorField
from torchsh.data.images import ImageField
from torchsh.errors import TorchshError
from torchsh.vocab import DTYPES, dtype_name


def capture(d, encode):
    """JSON for dataset d; encode(value) writes a wrapped dataset or a tensor (a ref when taken along)."""
    if isinstance(d, FileDataset):
        return {"kind": "data", "class": "FileDataset", "fields": [_field(f) for f in d.fields],
                "classes": list(d.classes) if d.classes else None}
    if isinstance(d, torch.utils.data.Subset):
        return {"kind": "data", "class": "Subset", "dataset": encode(d.dataset), "indices": [int(i) for i in d.indices]}
    if isinstance(d, transforms.TransformedDataset):
        return {"kind": "data", "class": "TransformedDataset", "dataset": encode(d.dataset),
                "steps": [[s.op, s.field, encode(s.args)] for s in d.steps]}
    if isinstance(d, torch.utils.data.TensorDataset):
        return {"kind": "data", "class": "TensorDataset", "tensors": [_slot(t, encode) for t in d.tensors]}
    raise TorchshError("not_portable", "a %s dataset has no recipe" % type(d).__name__)


def _slot(t, encode):
    """A TensorDataset's tensor: a ref when taken along, else its shape and dtype (the values are state)."""
    written = encode(t)
    if isinstance(written, dict) and "ref" in written:
        return written
    return {"empty": list(t.shape), "dtype": dtype_name(t.dtype), "device": str(t.device)}


def _field(f):
    if isinstance(f, NpyField):
        return {"type": "npy", "name": f.name, "path": f.path}
    if isinstance(f, SafetensorsField):
        return {"type": "safetensors", "name": f.name, "path": f.path, "key": f.key}
    if isinstance(f, ImageField):
        return {"type": "images", "name": f.name, "paths": list(f.paths)}
    if isinstance(f, TensorField):
        return {"type": "tensor", "name": f.name, "shape": list(f.tensor.shape), "dtype": dtype_name(f.tensor.dtype)}
    raise TorchshError("not_portable", "a dataset field of type %s has no recipe" % type(f).__name__)


def build(rec, decode):
    cls = rec["class"]
    if cls == "FileDataset":
        return FileDataset([_build_field(f) for f in rec["fields"]], rec.get("classes"))
    if cls == "Subset":
        return torch.utils.data.Subset(decode(rec["dataset"]), rec["indices"])
    if cls == "TransformedDataset":
        steps = [transforms.Step(op, field, decode(args)) for op, field, args in rec["steps"]]
        return transforms.TransformedDataset(decode(rec["dataset"]), steps)
    if cls == "TensorDataset":
        return torch.utils.data.TensorDataset(*[
            torch.empty(s["empty"], dtype=DTYPES[s["dtype"]], device=s["device"]) if "empty" in s else decode(s)
            for s in rec["tensors"]])
    raise TorchshError("not_portable", "unknown dataset recipe %r" % cls)


def _build_field(f):
    if f["type"] == "npy":
        return NpyField(f["name"], f["path"])
    if f["type"] == "safetensors":
        return SafetensorsField(f["name"], f["path"], f["key"])
    if f["type"] == "images":
        return ImageField(f["name"], f["paths"])
    return TensorField(f["name"], torch.empty(f["shape"], dtype=DTYPES[f["dtype"]]))


def tensors(d, skip_ids):
    """{path: tensor} for the in-memory values of d's chain, leaving out tensors and datasets in skip_ids."""
    out = {}
    chain = [d]
    while getattr(chain[-1], "dataset", None) is not None and id(chain[-1].dataset) not in skip_ids:
        chain.append(chain[-1].dataset)
    last = chain[-1]
    prefix = "dataset." * (len(chain) - 1)
    if isinstance(last, FileDataset):
        for i, f in enumerate(last.fields):
            if isinstance(f, TensorField):
                out["%sfields.%d" % (prefix, i)] = f.tensor.detach().cpu().contiguous().clone()
    elif isinstance(last, torch.utils.data.TensorDataset):
        for i, t in enumerate(last.tensors):
            if id(t) not in skip_ids:
                out["%stensors.%d" % (prefix, i)] = t.detach().cpu().contiguous().clone()
    return out


def load(d, values):
    """Copy values (from `tensors`) into the placeholders of d's chain (built from the same recipe)."""
    with torch.no_grad():
        for path, value in values.items():
            obj, parts = d, path.split(".")
            while parts[0] == "dataset":
                obj, parts = obj.dataset, parts[1:]
            holder = obj.fields[int(parts[1])].tensor if parts[0] == "fields" else obj.tensors[int(parts[1])]
            holder.copy_(value)
