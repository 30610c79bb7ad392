"""Pieces: contiguous row ranges of a streamed dataset that are cheap to read together and dear to read one row
at a time (a Parquet row group, an Arrow record batch, a tar shard). A piece-backed field holds no rows; its
PieceCache holds the pieces being read, converted, bounded in bytes.

piece_starts(dataset)          the pieces of a dataset (an int64 tensor of starts, starts[0] == 0), or None
reserve(dataset, rows, budget) make every cache inside DATASET hold ROWS rows + its largest piece (the
                               loader's shuffle window), after the memory budget admits the bytes
"""
import threading
from collections import OrderedDict

import torch
import torch.utils.data

from torchsh.data.datasets import FileDataset
from torchsh.data.transforms import TransformedDataset

DEFAULT_CACHE_BYTES = 64 << 20


class PieceCache:
    """A per-process LRU of converted pieces (key -> value, each with its size in bytes): what it holds stays
    within `limit` bytes, except a single piece bigger than the limit, held alone. Pickling drops the pieces
    (a DataLoader worker builds its own): only the limit travels."""

    def __init__(self, limit=DEFAULT_CACHE_BYTES):
        self.limit, self.held_bytes, self.peak_bytes = int(limit), 0, 0
        self._pieces, self._lock = OrderedDict(), threading.Lock()

    def get(self, key, load):
        """The piece under KEY, load() -> (value, nbytes) when it is not held (outside the lock: the daemon
        reads for several callers at once; two may load the same piece, one copy stays)."""
        with self._lock:
            if key in self._pieces:
                self._pieces.move_to_end(key)
                return self._pieces[key][0]
        value, size = load()
        with self._lock:
            if key not in self._pieces:
                while self._pieces and self.held_bytes + size > self.limit:
                    self.held_bytes -= self._pieces.popitem(last=False)[1][1]
                self._pieces[key] = (value, size)
                self.held_bytes += size
                self.peak_bytes = max(self.peak_bytes, self.held_bytes)
            return self._pieces[key][0]

    def reserve(self, limit):
        """Hold at least LIMIT bytes from now on (never fewer than before)."""
        self.limit = max(self.limit, int(limit))

    def clear(self):
        with self._lock:
            self._pieces.clear()
            self.held_bytes = 0

    def __len__(self):
        return len(self._pieces)

    def __getstate__(self):
        return {"limit": self.limit}

    def __setstate__(self, state):
        self.__init__(state["limit"])


def piece_starts(dataset):
    """The pieces of DATASET: an int64 tensor of their first rows, ascending, starting at 0 (piece k is rows
    [starts[k], starts[k+1])); through a TransformedDataset (same indices) to a FileDataset whose fields'
    boundaries are merged. None when it has no pieces (in-memory fields only, or another dataset)."""
    while isinstance(dataset, TransformedDataset):
        dataset = dataset.dataset
    if isinstance(dataset, torch.utils.data.Subset):
        return _subset_starts(dataset)
    if not isinstance(dataset, FileDataset):
        return None
    starts = [f.piece_starts for f in dataset.fields if getattr(f, "piece_starts", None) is not None]
    if not starts:
        return None
    return torch.unique(torch.cat(starts)) if len(starts) > 1 else starts[0]


def _subset_starts(subset):
    """The pieces of a Subset whose indices ascend (a stream's `data split`): where each piece of the dataset it
    takes from begins among its positions; None for indices in another order (a piece's rows are not together)."""
    inner = piece_starts(subset.dataset)
    if inner is None:
        return None
    try:
        indices = torch.as_tensor(subset.indices, dtype=torch.int64)
    except (TypeError, ValueError, RuntimeError):
        return None
    if len(indices) == 0 or len(indices) > 1 and not bool((indices[1:] > indices[:-1]).all()):
        return None
    starts = torch.unique_consecutive(torch.searchsorted(indices, inner))
    return starts[starts < len(indices)]


def piece_fields(dataset):
    """The piece-backed fields inside DATASET, through every dataset it wraps."""
    out = []
    while dataset is not None:
        if isinstance(dataset, FileDataset):
            out += [f for f in dataset.fields if getattr(f, "piece_starts", None) is not None]
        dataset = getattr(dataset, "dataset", None)
    return out


def cached(dataset):
    """Whether a piece-backed field inside DATASET keeps converted pieces (reading one row alone costs its whole
    piece: a Parquet row group); fields without a cache read each row alone, cheaply (a tar member, a token file)."""
    return any(getattr(f, "piece_cache", None) is not None for f in piece_fields(dataset))


def reserve(dataset, rows, budget):
    """Make every piece cache inside DATASET hold at least ROWS rows plus its largest piece, once the memory
    budget (or None) admits those bytes as the loader's shuffle buffer. Fields without a cache (a tar shard's,
    a token file's, chat lines: each row is read alone, cheaply) have nothing to grow."""
    caches = {}
    for field in piece_fields(dataset):
        cache = getattr(field, "piece_cache", None)
        if cache is None:  # a field that keeps no rows (memory-mapped, one pread an item): the window costs it nothing
            continue
        caches[id(cache)] = (cache, caches.get(id(cache), (cache, 0))[1] + field.bytes_for(rows, largest_piece=True))
    wanted = sum(max(0, want - cache.limit) for cache, want in caches.values())
    if budget is not None and wanted:
        budget.admit_bytes(wanted, "the loader's shuffle buffer")
    for cache, want in caches.values():
        cache.reserve(want)
