"""A token file (`data tokenize`): one int32 .npy array of token ids, written piece by piece (never held whole) and
read memory-mapped, and the two ways its tokens become a language model's (input_ids, labels) items.

TokenWindows (--pack): item i is tokens[i*N:(i+1)*N], as input_ids and again as labels (`fit --loss lm` shifts
the labels itself, as transformers does); the last partial window is not an item. DocumentRows: item i is
document i's tokens cut to N, then padded to N (pad id for input_ids, -100 for labels), as data/chat.py pads.
Every read copies out of the map into an int64 tensor of its own (a model's in-place op must not write the map).
"""
import struct

import numpy as np
import torch

from torchsh import fileio
from torchsh.data.datasets import NpyField
from torchsh.errors import bad_argument

IGNORE_INDEX = -100
DTYPE = np.dtype("<i4")
_HEADER_BYTES = 128  # room for any 1-D shape: the header is written twice, first with 0 rows, then the count


def npy_header(count):
    """A version 1.0 .npy header of a 1-D int32 array of COUNT values, padded to _HEADER_BYTES."""
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (DTYPE.str, count)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", _HEADER_BYTES - 10) + (text.ljust(_HEADER_BYTES - 11) + "\n").encode()


def write(path, pieces):
    """Write the token ids of PIECES (an iterable of int sequences, one piece at a time) as one int32 .npy at
    PATH (atomically, fsync'd); the number of tokens written. A piece is dropped once written."""
    count = [0]

    def stream(tmp):
        with open(tmp, "wb", buffering=0) as f:  # each piece goes to the file as it is made
            f.write(npy_header(0))
            for ids in pieces:
                array = np.asarray(ids, dtype=np.int64)
                if array.size and (array.min() < 0 or array.max() > np.iinfo(DTYPE).max):
                    raise bad_argument("a token id is outside int32: %d" % (array.max() if array.max() > 0
                                                                              else array.min()))
                data = memoryview(array.astype(DTYPE).tobytes())
                while data:
                    data = data[f.write(data):]
                count[0] += array.size
            f.seek(0)
            f.write(npy_header(count[0]))

    fileio.atomic_write(path, stream)
    return count[0]


class _Mapped:
    """A memory-mapped field keeps no pieces (the page cache holds what was touched): it has no piece_cache, so
    the loader's shuffle window costs it no bytes (pieces.reserve)."""

    mapped_bytes = 0


class TokenWindows(_Mapped):
    """--pack: consecutive SEQ_LEN windows of the token file, pieces of PIECE windows."""

    def __init__(self, name, path, seq_len, piece=64):
        self.name, self.tokens, self.seq_len = name, NpyField(name, path), seq_len
        self.length = len(self.tokens) // seq_len
        self.piece_starts = torch.arange(0, max(self.length, 1), piece, dtype=torch.int64)

    def __len__(self):
        return self.length

    def item(self, i):
        return self.rows(slice(i, i + 1))[0]

    def items(self, indices):
        return self.rows(torch.as_tensor(indices, dtype=torch.int64)).unbind(0)

    def rows(self, index):
        """The windows at index (a slice, or an int64 tensor of indices) stacked [k, N]: one private copy."""
        windows = self.tokens.array[:self.length * self.seq_len].reshape(self.length, self.seq_len)
        picked = windows[index.numpy() if isinstance(index, torch.Tensor) else index]
        return torch.from_numpy(picked.astype(np.int64))  # astype copies: never the map

    def held_tensors(self):
        return []


class DocumentRows(_Mapped):
    """One document an item: its tokens (ends[i-1]..ends[i] in the token file) cut to SEQ_LEN, padded with FILL."""

    def __init__(self, name, path, ends, seq_len, fill, piece=1024):
        self.name, self.tokens, self.seq_len, self.fill = name, NpyField(name, path), seq_len, fill
        self.ends = ends  # int64 [documents]: each document's end in the token file (its start: the one before's)
        self.piece_starts = torch.arange(0, max(len(ends), 1), piece, dtype=torch.int64)

    def __len__(self):
        return len(self.ends)

    def item(self, i):
        return self.rows(torch.tensor([i]))[0]

    def items(self, indices):
        return self.rows(torch.as_tensor(indices, dtype=torch.int64)).unbind(0)

    def rows(self, index):
        indices = range(len(self))[index] if isinstance(index, slice) else index.tolist()
        out = torch.full((len(indices), self.seq_len), self.fill, dtype=torch.int64)
        tokens = self.tokens.array
        for k, i in enumerate(indices):
            start = int(self.ends[i - 1]) if i > 0 else 0
            stop = min(int(self.ends[i]), start + self.seq_len)
            out[k, :stop - start] = torch.from_numpy(tokens[start:stop].astype(np.int64))
        return out

    def held_tensors(self):
        return [self.ends]
