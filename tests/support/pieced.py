"""A piece-backed dataset for tests of the loader's order (data/piecesampler.py), with no file behind it: item i
is (float(i) as a [1] tensor, i), its field has pieces of the sizes given and the interface data/pieces.py reads
(piece_starts, piece_cache, bytes_for). `reads` counts the pieces this process touched, per piece."""
import collections

import torch

from torchsh.data.datasets import FileDataset
from torchsh.data.pieces import PieceCache

ROW_BYTES = 8  # one float32 feature and one int32-sized share of the label, as bytes_for counts them here


class IndexField:
    """Row i is float(i); its pieces are contiguous row ranges of the given sizes."""

    def __init__(self, name, sizes):
        self.name = name
        sizes = torch.as_tensor(sizes, dtype=torch.int64)
        self.length = int(sizes.sum())
        self.piece_starts = torch.cumsum(sizes, 0) - sizes
        self.largest = int(sizes.max()) if len(sizes) else 0
        self.piece_cache = PieceCache(0)
        self.reads = collections.Counter()
        self.mapped_bytes = 0

    def __len__(self):
        return self.length

    def bytes_for(self, rows, largest_piece=False):
        return (rows + (self.largest if largest_piece else 0)) * ROW_BYTES

    def held_tensors(self):
        return []

    def _count(self, index):
        pieces = torch.searchsorted(self.piece_starts, torch.as_tensor(index), right=True) - 1
        self.reads.update(set(pieces.reshape(-1).tolist()))

    def item(self, i):
        self._count([i])
        return torch.tensor([float(i)])

    def rows(self, index):
        index = torch.arange(self.length)[index] if isinstance(index, slice) else torch.as_tensor(index)
        self._count(index)
        return index.to(torch.float32).unsqueeze(1)


class LabelField(IndexField):
    """Row i is i (int64), with the same pieces."""

    def item(self, i):
        self._count([i])
        return torch.tensor(i)

    def rows(self, index):
        return super().rows(index).squeeze(1).to(torch.int64)


def pieced(sizes):
    """A FileDataset of sum(sizes) items (x = [float(i)], y = i) whose pieces have those sizes."""
    return FileDataset([IndexField("x", sizes), LabelField("y", sizes)])
