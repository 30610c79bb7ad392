""".safetensors files: read into fresh memory, never mapped; written atomically, with torchsh's JSON metadata.

safetensors' own readers (load_file, safe_open's get_tensor) return tensors backed by a private mapping of
the file. Such a tensor reads the file's pages as long as it lives: when the file is truncated or rewritten
in place (`cp other.safetensors it.safetensors`, a training script saving over it), touching the tensor
raises SIGBUS, and the daemon dies with every object it holds. So a held value is read here with pread into
a tensor of its own: a file that changed meanwhile is a short read, a file_error, never a signal.

safe_open still checks the file first (its header, dtypes, and offsets against its size), for its error
messages; each read checks its own entry again, since the file may have changed after that check.
`nn save`, `checkpoint save`, fit's checkpoints and the distributed handoff write here (write: the metadata
under "torchsh", as JSON); `torch save` writes plain tensors (write_named).
"""
import json
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from torchsh.errors import TorchshError
from torchsh.fileio import WRITE_ERRORS, atomic_write, file_error, regular_file

_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
           "BOOL": torch.bool, "U16": torch.uint16, "U32": torch.uint32, "U64": torch.uint64,
           "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}
_PIECE = 1 << 30  # bytes per pread: Linux returns at most ~2 GiB from one call


def read(path):
    """(tensors, metadata or None) from a safetensors file; anything else (a pickle, a FIFO) is a file_error."""
    regular_file(path)
    try:
        with File(path) as f:  # each value in memory of its own, never a map of the file
            tensors = {k: f.read(k) for k in f.keys()}
            meta = (f.metadata() or {}).get("torchsh")
        return tensors, (json.loads(meta) if meta else None)
    except WRITE_ERRORS as e:  # the same family: OSError, ValueError, RuntimeError, SafetensorError
        raise file_error(path, "read", e) from None


def read_tensors(path):
    """{name: tensor} of a safetensors file, each in memory of its own."""
    with File(path) as f:
        return {k: f.read(k) for k in f.keys()}


def write(path, tensors, meta=None):
    """Write tensors (+ JSON metadata) to a safetensors file atomically (atomic_write)."""
    metadata = {"torchsh": json.dumps(meta, allow_nan=True)} if meta is not None else None
    data = own_storage({k: live(v) for k, v in tensors.items()})
    atomic_write(path, lambda tmp: save_file(data, tmp, metadata=metadata))


def write_named(path, named):
    """`torch save`'s writer: the tensors as they are, no metadata."""
    save_file({k: v.contiguous() for k, v in named.items()}, path)


def own_storage(tensors):
    """tensors, with a copy for each value that shares a storage with one before it (a held view of a held
    tensor, tied weights): safetensors refuses two names on one storage. The others stay the live tensors
    (safetensors writes from their memory), so a save does not hold every value twice."""
    seen = set()
    for key, t in tensors.items():
        storage = t.untyped_storage()
        where = (t.device, storage.data_ptr(), storage.nbytes())
        if where[1] and where[2]:  # what has no bytes shares nothing
            if where in seen:
                tensors[key] = t.clone()
            seen.add(where)
    return tensors


def live(t):
    """t's values as safetensors writes them, the live tensor itself when it can be: written at once, under the
    tensor lock, so no copy (a lazy conj/neg view is resolved: safetensors writes memory, not view bits)."""
    return t.detach().cpu().resolve_conj().resolve_neg().contiguous()


class File:
    """An open safetensors file: keys(), metadata(), read(key) -> a tensor in memory of its own.
    Open until close() (or the end of a `with`, or the object's end)."""

    def __init__(self, path):
        self.path = path
        with safe_open(path, framework="pt") as f:  # SafetensorError/OSError for what is no safetensors file
            self._keys, self._metadata = list(f.keys()), f.metadata()
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO swapped in fails, not hangs
        try:
            self._end = os.fstat(self._fd).st_size
            size = int.from_bytes(self._pread(8, 0), "little")
            if size > self._end - 8:  # checked before reading: the file may not be the one safe_open checked
                raise ValueError("header past the end")
            self._header, self._start = json.loads(self._pread(size, 8)), 8 + size
            if not isinstance(self._header, dict):
                raise ValueError("header is no object")
        except (ValueError, OSError, TorchshError):
            self.close()
            raise self._changed() from None

    def keys(self):
        return list(self._keys)

    def metadata(self):
        return self._metadata

    def read(self, key):
        """The value under key, read into a new CPU tensor."""
        entry = self._header.get(key)
        if not isinstance(entry, dict) or entry.get("dtype") not in _DTYPES or sys.byteorder != "little":
            if isinstance(entry, dict) and key in self._keys:  # a dtype read here byte for byte is not known:
                with safe_open(self.path, framework="pt") as f:  # safetensors' own reader, copied off its map
                    return f.get_tensor(key).clone()
            raise self._changed()
        dtype, shape, offsets = _DTYPES[entry["dtype"]], entry.get("shape"), entry.get("data_offsets")
        if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)
                and isinstance(offsets, list) and len(offsets) == 2):
            raise self._changed()
        begin, end = offsets
        length = dtype.itemsize
        for n in shape:
            length *= n
        if not (type(begin) is type(end) is int and 0 <= begin and end - begin == length
                and self._start + end <= self._end):  # checked before allocating: the header may be anything now
            raise self._changed()
        t = torch.empty(shape, dtype=dtype)
        if length:
            view = memoryview(t.reshape(-1).view(torch.uint8).numpy())  # the tensor's own bytes
            done = 0
            while done < length:
                got = os.preadv(self._fd, [view[done:done + _PIECE]], self._start + begin + done)
                if got <= 0:
                    raise self._changed()
                done += got
        return t

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_fd", None) is not None:
            self.close()

    def _pread(self, n, offset):
        data = os.pread(self._fd, n, offset)
        if len(data) != n:
            raise self._changed()
        return data

    def _changed(self):
        return TorchshError("file_error", "%s changed while it was read (written over in place?)" % self.path,
                            "read it again once nothing writes it")
