"""Datasets' and loaders' persistence: what `data open|split|transform|tensors` and `data loader` made.

A dataset is a chain the verbs built, one row per class below: FileDataset (fields over files, or in memory),
Subset (a split: its indices), TransformedDataset (steps) and TensorDataset (held tensors). Each is written as
JSON; in-memory tensors (a csv's columns, a TensorDataset's tensors not taken along) are state, saved under a
path (`fields.0`, `dataset.tensors.1`) and copied back into the placeholders build made. A memory-mapped .npy,
a .safetensors or an image folder is recorded by its path: the file is read again where the recipe is built
(the same machine for a session; the files must be there); a stream's fields (Parquet, Arrow, tar shards, a
`data sql` result) by their files or query, and their plans (recipes/streams.py). A loader is its dataset (a
reference, or written inside), its options and seed; its position and shuffle generator are its state.
"""
import torch
import torch.utils.data

from torchsh.data import transforms
from torchsh.data.datasets import FileDataset, NpyField, SafetensorsField, TensorField
from torchsh.data.images import ImageField
from torchsh.data.loader import Loader
from torchsh.recipes import streams
from torchsh.recipes.base import Persistence, json_state, load_json_state, nested_recipe, not_portable
from torchsh.vocab import DTYPES, dtype_name


def _file_dataset(d, walk):
    return {"fields": [_field(f) for f in d.fields], "classes": list(d.classes) if d.classes else None,
            "categories": dict(d.categories) if getattr(d, "categories", None) else None}


def _file_dataset_built(rec, walk):
    shared = {}  # the sources a stream's fields share (recipes/streams.py)
    d = FileDataset([_build_field(f, shared) for f in rec["fields"]], rec.get("classes"))
    d.categories = rec.get("categories") or {}
    return d


def _subset(d, walk):
    return {"dataset": walk.value(d.dataset), "indices": [int(i) for i in d.indices]}


def _subset_built(rec, walk):
    return torch.utils.data.Subset(walk.value(rec["dataset"]), rec["indices"])


def _transformed(d, walk):
    return {"dataset": walk.value(d.dataset), "steps": [[s.op, s.field, walk.value(s.args)] for s in d.steps]}


def _transformed_built(rec, walk):
    steps = [transforms.Step(op, field, walk.value(args)) for op, field, args in rec["steps"]]
    return transforms.TransformedDataset(walk.value(rec["dataset"]), steps)


def _tensors(d, walk):
    """A TensorDataset's tensors: a ref when taken along, else shape and dtype (the values are state)."""
    slots = []
    for t in d.tensors:
        written = walk.value(t)
        if not (isinstance(written, dict) and "ref" in written):
            written = {"empty": list(t.shape), "dtype": dtype_name(t.dtype), "device": str(t.device)}
        slots.append(written)
    return {"tensors": slots}


def _tensors_built(rec, walk):
    return torch.utils.data.TensorDataset(*[
        torch.empty(s["empty"], dtype=DTYPES[s["dtype"]], device=s["device"]) if "empty" in s else walk.value(s)
        for s in rec["tensors"]])


# One row per dataset class the verbs make: its recipe's own fields, and a dataset built from them
_CLASSES = {c.__name__: (c, capture, build) for c, capture, build in (
    (FileDataset, _file_dataset, _file_dataset_built),
    (torch.utils.data.Subset, _subset, _subset_built),
    (transforms.TransformedDataset, _transformed, _transformed_built),
    (torch.utils.data.TensorDataset, _tensors, _tensors_built),
)}

# One row per field type of a FileDataset: its name in a recipe, its class, its JSON, a field built from that
_FIELDS = (
    ("npy", NpyField, lambda f: {"path": f.path}, lambda j: NpyField(j["name"], j["path"])),
    ("safetensors", SafetensorsField, lambda f: {"path": f.path, "key": f.key},
     lambda j: SafetensorsField(j["name"], j["path"], j["key"])),
    ("images", ImageField, lambda f: {"paths": list(f.paths)}, lambda j: ImageField(j["name"], j["paths"])),
    ("tensor", TensorField, lambda f: {"shape": list(f.tensor.shape), "dtype": dtype_name(f.tensor.dtype)},
     lambda j: TensorField(j["name"], torch.empty(j["shape"], dtype=DTYPES[j["dtype"]]))),
)


def capture_dataset(d, walk):
    """JSON for dataset d; a wrapped dataset or a tensor is a ref when taken along."""
    row = next((r for r in _CLASSES.values() if isinstance(d, r[0])), None)
    if row is None:
        raise not_portable("a %s dataset has no recipe" % type(d).__name__)
    return dict({"kind": "data", "class": row[0].__name__}, **row[1](d, walk))


def _field(f):
    row = next((r for r in _FIELDS if isinstance(f, r[1])), None)
    if row is None:  # a piece-backed field (a stream), or not_portable saying why it has no recipe
        return streams.capture_field(f)
    return dict({"type": row[0], "name": f.name}, **row[2](f))


def build_dataset(rec, walk):
    row = _CLASSES.get(rec["class"])
    if row is None:
        raise not_portable("unknown dataset recipe %r" % rec["class"])
    return row[2](rec, walk)


def _build_field(j, shared):
    if j["type"] in streams.STREAM_TYPES:
        return streams.build_field(j, shared)
    return next((r for r in _FIELDS if r[0] == j["type"]), _FIELDS[-1])[3](j)


def dataset_state(d, skip):
    """{path: tensor} for the in-memory values of d's chain, leaving out tensors and datasets in skip."""
    out = {}
    chain = [d]
    while getattr(chain[-1], "dataset", None) is not None and id(chain[-1].dataset) not in skip:
        chain.append(chain[-1].dataset)
    last = chain[-1]
    prefix = "dataset." * (len(chain) - 1)
    if isinstance(last, FileDataset):
        for i, f in enumerate(last.fields):
            if isinstance(f, TensorField):
                out["%sfields.%d" % (prefix, i)] = f.tensor.detach().cpu().contiguous().clone()
            elif isinstance(f, streams.VALUES_TYPES):
                out["%sfields.%d" % (prefix, i)] = streams.values(f)
    elif isinstance(last, torch.utils.data.TensorDataset):
        for i, t in enumerate(last.tensors):
            if id(t) not in skip:
                out["%stensors.%d" % (prefix, i)] = t.detach().cpu().contiguous().clone()
    return out


def load_dataset(d, values):
    """Copy values (from dataset_state) into the placeholders of d's chain (built from the same recipe)."""
    with torch.no_grad():
        for path, value in values.items():
            obj, parts = d, path.split(".")
            while parts[0] == "dataset":
                obj, parts = obj.dataset, parts[1:]
            holder = obj.fields[int(parts[1])].tensor if parts[0] == "fields" else obj.tensors[int(parts[1])]
            holder.copy_(value)


def capture_loader(loader, walk):
    window = getattr(loader, "shuffle_buffer", None)  # data/piecesampler.py's window, kept only when given
    return {"kind": "loader", "dataset": walk.value(loader.dataset), "batch_size": loader.batch_size,
            "shuffle": loader.shuffle, "drop_last": loader.drop_last, "seed": loader.seed,
            "num_workers": loader.num_workers, **({"shuffle_buffer": window} if window is not None else {})}


def build_loader(rec, walk):
    return Loader(walk.value(rec["dataset"]), batch_size=rec["batch_size"], shuffle=rec["shuffle"],
                  drop_last=rec["drop_last"], seed=rec["seed"], num_workers=rec["num_workers"],
                  shuffle_buffer=rec.get("shuffle_buffer"))


def loader_state(loader, skip):
    """Its position as JSON state, and its dataset's in-memory values under `data.` when not saved on its own."""
    values = json_state(loader)
    if id(loader.dataset) not in skip:
        values.update({"data." + k: v for k, v in dataset_state(loader.dataset, skip).items()})
    return values


def load_loader(loader, values):
    load_json_state(loader, values)
    load_dataset(loader.dataset, {k[5:]: values[k] for k in values if k.startswith("data.")})


DATASET = Persistence(capture_dataset, build_dataset, dataset_state, load_dataset, inline=nested_recipe)
LOADER = Persistence(capture_loader, build_loader, loader_state, load_loader, inline=nested_recipe)
