"""The state dict a torch.export archive (.pt2) holds, read without torch.export.load: `torch nn load M F.pt2`.

torch.export.save writes each weight's bytes raw (data/weights/weight_N, stored uncompressed) and describes
them in JSON (data/weights/model_weights_config.json: dtype, sizes, strides, storage offset). torch.export.load
reads those too, but falls back to torch.load(weights_only=False) for a weight marked use_pickle (a tensor
subclass) and for an archive of the legacy layout (data/weights/model.pt). Here the JSON and the raw bytes are
read by zipfile alone; a pickled weight or a legacy file goes through weights_only=True (refused naming the
globals it needs, `--trust` allowing them, as for a .pt); nothing else in the archive is opened: not the graph,
not its sample inputs (a pickle), not its constants. The keys are the exported module's state_dict names
(parameters and persistent buffers), so a .pt2 exported from a model loads back into that model.
"""
import io
import json
import zipfile

import torch

from torchsh.errors import TorchshError
from torchsh.formats import ptfile

MAX_CONFIG_BYTES = 64 << 20  # JSON naming each weight once: tens of MiB would be hundreds of thousands of weights
_CONFIG = "/data/weights/model_weights_config.json"
_LEGACY = "/data/weights/model.pt"


def read(path, trusted=(), unsafe_globals=None):
    """{name: tensor} of the archive's weights (model "model", the one torch.export.save writes)."""
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: info for info in archive.infolist()}
        root = _root(path, members)
        if root + _LEGACY in members:
            legacy = io.BytesIO(_member(archive, members[root + _LEGACY]))
            state = ptfile.read_trusted(legacy, "%s (its weights)" % path, trusted, unsafe_globals)
            return _checked(path, state)
        config = _config(path, archive, members.get(root + _CONFIG))
        flats = {}
        return {name: _weight(path, archive, members, root, meta, flats, trusted, unsafe_globals)
                for name, meta in config.items()}


def describe(f, path):
    """The header-only view `model inspect` gives of an archive: each weight's key, dtype, shape and stored
    bytes from the weights config, plus the archive's format marks; no weight, graph or pickle is read."""
    with zipfile.ZipFile(f) as archive:
        members = {info.filename: info for info in archive.infolist()}
        root = _root(path, members)
        marks = {mark: _member(archive, members[root + "/" + mark]).decode("ascii", "replace").strip()
                 for mark in ("archive_format", "archive_version") if root + "/" + mark in members}
        if root + _LEGACY in members:  # the legacy layout keeps its weights in one pickle: nothing to list
            return dict(format="pt2", tensors=[], metadata=dict(marks, weights="a torch.save pickle (legacy)"))
        tensors = []
        for key, meta in _config(path, archive, members.get(root + _CONFIG)).items():
            info = members.get("%s/data/weights/%s" % (root, meta.get("path_name")))
            tensor_meta = meta.get("tensor_meta") or {}
            tensors.append({"key": key, "dtype": str(_dtype(tensor_meta.get("dtype"))).replace("torch.", ""),
                            "shape": _ints(tensor_meta.get("sizes", [])), "bytes": info.file_size if info else 0})
        return dict(format="pt2", tensors=tensors, metadata=marks)


def _root(path, members):
    """The archive's one top folder, once its archive_format says pt2 (torch.export.save's own mark)."""
    roots = {name.split("/", 1)[0] for name in members if "/" in name}
    root = roots.pop() if len(roots) == 1 else None
    if root is None or root + "/archive_format" not in members:
        raise TorchshError("file_error", "%s is not a torch.export archive (no archive_format)" % path,
                           "a .pt2 is what torch.export.save writes")
    return root


def _member(archive, info):
    """A member's bytes, refusing a compressed one: torch.export.save stores them as they are, so a member
    that inflates is not its writing (and could inflate past any memory)."""
    if info.compress_type != zipfile.ZIP_STORED:
        raise TorchshError("file_error", "%s: member %s is compressed; torch.export.save writes none"
                           % (archive.filename, info.filename))
    return archive.read(info)


def _config(path, archive, info):
    if info is None:
        raise TorchshError("file_error", "%s holds no weights config (model_weights_config.json)" % path,
                           "an archive of several models (torch.export.pt2_archive) is not read here; "
                           "`torch model open FILE.pt2` opens a whole program")
    if info.file_size > MAX_CONFIG_BYTES:
        raise TorchshError("too_large", "%s: its weights config is over %d MiB" % (path, MAX_CONFIG_BYTES >> 20))
    config = json.loads(_member(archive, info))["config"]
    if not isinstance(config, dict):
        raise ValueError("the weights config is not a JSON object")
    return config


def _weight(path, archive, members, root, meta, flats, trusted, unsafe_globals):
    """One weight: through weights_only when pickled, else its raw bytes viewed with its strides (weights
    sharing a file share its storage, as they did when exported)."""
    info = members.get("%s/data/weights/%s" % (root, meta["path_name"]))
    if info is None:
        raise KeyError("no member for weight file %r" % meta["path_name"])
    if meta.get("use_pickle"):
        pickled = io.BytesIO(_member(archive, info))
        tensor = ptfile.read_trusted(pickled, "%s member %s" % (path, info.filename), trusted, unsafe_globals)
        if not isinstance(tensor, torch.Tensor):
            raise TorchshError("file_error", "%s member %s holds %s, not a tensor" % (path, info.filename,
                                                                                        type(tensor).__name__))
        return tensor
    tensor_meta = meta["tensor_meta"]
    dtype = _dtype(tensor_meta["dtype"])
    if info.filename not in flats:
        flats[info.filename] = torch.frombuffer(bytearray(_member(archive, info)), dtype=dtype) \
            if info.file_size else torch.empty(0, dtype=dtype)
    sizes, strides = _ints(tensor_meta["sizes"]), _ints(tensor_meta["strides"])
    offset = _ints([tensor_meta["storage_offset"]])[0]
    if not info.file_size:
        return torch.zeros(sizes, dtype=dtype)
    flat = flats[info.filename]
    last = offset + sum((n - 1) * s for n, s in zip(sizes, strides)) if all(sizes) else -1
    if flat.dtype != dtype or offset < 0 or min(strides, default=0) < 0 or last >= flat.numel():
        raise ValueError("weight file %r does not hold a %s tensor of %s" % (meta["path_name"], dtype, sizes))
    return torch.as_strided(flat, sizes, strides, offset)


def _ints(values):
    """torch.export's serialized ints ({"as_int": 4}); a symbolic one is not a weight's size."""
    if not all(isinstance(v, dict) and isinstance(v.get("as_int"), int) for v in values):
        raise ValueError("a weight with a symbolic size or stride")
    return [v["as_int"] for v in values]


def _dtype(number):
    """torch.export's serialized dtype number (its schema's ScalarType) as a torch.dtype."""
    from torch._export.serde.schema import ScalarType
    from torch._export.serde.serialize import deserialize_scalar_type
    try:
        return deserialize_scalar_type(ScalarType(number))
    except (ValueError, KeyError):
        raise ValueError("an unknown dtype number %r" % (number,)) from None


def _checked(path, state):
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise TorchshError("file_error", "%s holds weights of %s, not a state_dict" % (path, type(state).__name__))
    return dict(state)
