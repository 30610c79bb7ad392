""".npy and .npz files: numpy's arrays as tensors, and tensors as numpy's arrays.

Reads check each array's header before its data (fileio.check_npy_header): a header claiming more bytes
than the file holds is refused before anything is allocated, and object arrays (a pickle) are never read.
An .npz member is checked against its stored (uncompressed) size the same way.
"""
import io
import lzma
import os
import zipfile
import zlib

import numpy as np
import torch

from torchsh.fileio import check_npy_header, file_error, read_array, regular_file


def read_npy(path):
    """{"": the file's one array as a tensor}."""
    return {"": from_numpy(load_npy(path))}


def read_npz(path):
    """{name: tensor} of an .npz file's arrays."""
    return {k: from_numpy(v) for k, v in load_npz(path).items()}


def write_npy(path, named):
    np.save(path, to_numpy(next(iter(named.values()))), allow_pickle=False)


def write_npz(path, named):
    with open(path, "wb") as f:
        np.savez(f, **{k: to_numpy(v) for k, v in named.items()})


def load_npy(path):
    regular_file(path)
    try:
        with open(path, "rb") as f:
            check_npy_header(f, os.fstat(f.fileno()).st_size, path)
            return read_array(f, path, "file_error")
    except OSError as e:
        raise file_error(path, "read", e) from None


def load_npz(path):
    """{name: ndarray} from an .npz, each member's header checked against its stored (uncompressed) size first."""
    regular_file(path)
    out = {}
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                where = "%s member %s" % (path, info.filename)
                with z.open(info) as m:
                    head = io.BytesIO(m.read(1 << 16))  # a header is at most a few KiB
                check_npy_header(head, info.file_size, where)
                with z.open(info) as m:
                    out[name] = read_array(m, where, "file_error")
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError,
            RuntimeError, zlib.error, lzma.LZMAError) as e:  # a damaged member fails while it is decompressed
        raise file_error(path, "read", e) from None
    return out


def from_numpy(array):
    """A tensor of the array (a private copy of a read-only one); ValueError for dtypes PyTorch has no twin of."""
    if not array.flags.writeable:
        array = array.copy()
    try:
        return torch.from_numpy(array)
    except TypeError as e:  # strings, structs, datetimes: numpy dtypes with no tensor twin
        raise ValueError("numpy dtype %s has no PyTorch equivalent (%s)" % (array.dtype, e)) from None


def to_numpy(t):
    if t.dtype == torch.bfloat16:
        raise ValueError("numpy has no bfloat16; save as .safetensors or .pt")
    return t.resolve_conj().numpy()
