"""What a tensor file holds, read from its headers alone: `torch model inspect FILE`. Nothing is unpickled.

- .safetensors: the 8-byte length and the JSON header (names, dtypes, shapes, byte ranges, metadata); the
  data is never read, so a multi-GB file answers at once.
- .npy / .npz: each array's .npy header (fileio.check_npy_header: object arrays, which are pickles, refused).
- .pt2 (torch.export.save's zip): each weight's key, dtype, shape and bytes from its JSON weights config
  (formats/pt2weights.describe); the graph and the pickled sample inputs are not opened.
- .pt / .pth / .ckpt (torch.save's zip): the archive's listing (its storages and their bytes) and the globals
  its pickle would need beyond what torch.load(weights_only=True) allows, from PyTorch's own static scan of
  the pickle's opcodes (torch.serialization.get_unsafe_globals_in_checkpoint), which runs none of them. The
  keys and shapes of a .pt live inside that pickle, so they are not listed here: `torch nn load` reads them
  with weights_only=True.
Each reader gives a dict: format, bytes (the file's), tensors [{key, dtype, shape, bytes}], metadata, and for
a .pt storages and globals_needed. torchsh's own .safetensors keep JSON under the metadata's "torchsh" key
(stfile.write): `torchsh_metadata` reads it back.
"""
import io
import json
import os
import struct
import zipfile

import numpy as np

from torchsh import fileio
from torchsh.errors import TorchshError

MAX_SAFETENSORS_HEADER = 100 << 20  # the safetensors library's own limit on the JSON header
PT_NAMES = (".pt", ".pth", ".ckpt", ".bin")


def inspect(path):
    """The header-only description of the tensor file at path, by its extension."""
    size = fileio.regular_file(path).st_size
    ext = os.path.splitext(path)[1].lower()
    readers = {".safetensors": _safetensors, ".npy": _npy, ".npz": _npz, ".pt2": _pt2}
    reader = readers.get(ext) or (_pt if ext in PT_NAMES else None)
    if reader is None:
        raise TorchshError("bad_argument", "cannot inspect %r files" % (ext or os.path.basename(path)),
                           "model inspect reads .safetensors .npy .npz .pt .pth .ckpt .bin .pt2")
    try:
        with open(path, "rb") as f:
            found = reader(f, size, path)
    except (OSError, ValueError, KeyError, struct.error, zipfile.BadZipFile, EOFError) as e:
        raise fileio.file_error(path, "read", e) from None
    return dict(file=path, bytes=size, **found)


def _pt2(f, size, path):
    from torchsh.formats import pt2weights  # torch's export serde, imported only when a .pt2 is asked about
    return pt2weights.describe(f, path)


def _safetensors(f, size, path):
    (length,) = struct.unpack("<Q", f.read(8).ljust(8, b"\0"))
    if length > min(size - 8, MAX_SAFETENSORS_HEADER):
        raise TorchshError("file_error", "%s is not a safetensors file: its header claims %d bytes of %d"
                           % (path, length, size))
    header = json.loads(f.read(length))
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    tensors = [{"key": key, "dtype": _st_dtype(info["dtype"]), "shape": list(info["shape"]),
                "bytes": info["data_offsets"][1] - info["data_offsets"][0]} for key, info in header.items()]
    return dict(format="safetensors", tensors=tensors, metadata=metadata)


def torchsh_metadata(metadata):
    """The JSON object torchsh keeps under a .safetensors file's metadata key "torchsh" (`nn save`'s data,
    a checkpoint's format and parts), or {} for a file of another's making (or a value that is no object)."""
    try:
        value = json.loads(metadata.get("torchsh") or "{}") if isinstance(metadata, dict) else {}
    except (ValueError, TypeError):  # metadata edited by hand: not JSON, or not a string
        return {}
    return value if isinstance(value, dict) else {}


def _st_dtype(name):
    """safetensors' dtype names (F32, BF16, I64) as torchsh and PyTorch spell them."""
    names = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
             "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "U16": "uint16",
             "U32": "uint32", "U64": "uint64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
    return names.get(name, name)


def _npy_entry(f, size, where, key):
    shape, _, dtype, _ = fileio.check_npy_header(f, size, where)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    return {"key": key, "dtype": str(dtype), "shape": list(shape), "bytes": count * dtype.itemsize}


def _npy(f, size, path):
    return dict(format="npy", tensors=[_npy_entry(f, size, path, "")], metadata={})


def _npz(f, size, path):
    tensors = []
    with zipfile.ZipFile(f) as archive:
        for info in archive.infolist():
            with archive.open(info) as member:
                head = member.read(1 << 16)  # numpy writes headers of at most a few KiB
            where = "%s member %s" % (path, info.filename)
            tensors.append(_npy_entry(io.BytesIO(head), info.file_size, where, info.filename[:-4]
                                      if info.filename.endswith(".npy") else info.filename))
    return dict(format="npz", tensors=tensors, metadata={})


def is_torchscript(path):
    """Whether the file is a TorchScript archive (torch.jit.save's zip), from its listing alone."""
    with open(path, "rb") as f:
        if not zipfile.is_zipfile(f):
            return False
        with zipfile.ZipFile(f) as archive:
            return _torchscript(archive.namelist())


def _torchscript(names):
    return any(n.split("/", 1)[-1].startswith(("code/", "constants.pkl")) for n in names)


def _pt(f, size, path):
    import torch
    if not zipfile.is_zipfile(f):
        raise TorchshError("file_error", "%s is not a torch.save zip archive (an old-style pickle, or not PyTorch's)"
                           % path, "nothing in it can be listed without unpickling; re-save it with torch.save")
    with zipfile.ZipFile(f) as archive:
        names = archive.namelist()
        storages = [{"name": n.split("/", 1)[-1], "bytes": archive.getinfo(n).file_size} for n in names
                    if "/data/" in n and not n.endswith("/")]
    if _torchscript(names):  # TorchScript code, not a pickle of Python objects: `torch nn jit_load` opens it
        return dict(format="torchscript", tensors=[], metadata={}, storages=storages, members=len(names))
    f.seek(0)
    needed = sorted(torch.serialization.get_unsafe_globals_in_checkpoint(f))
    return dict(format="pt", tensors=[], metadata={}, storages=storages, globals_needed=needed,
                weights_only=not needed, members=len(names))
