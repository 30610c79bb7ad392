"""The loader's order over a piece-backed dataset (data/pieces.py): a dataset whose rows live in pieces that are
cheap to read together and dear to read one row at a time (Parquet row groups, Arrow record batches, tar shards).

An epoch's base order, with --shuffle: the pieces permuted (torch.randperm with the loader's generator), then
grouped in order into windows of at least `window_rows` rows, the rows of each window permuted (a generator
seeded per window from the loader's generator: one draw of all windows' seeds at the epoch's start, so a
resumed epoch passes over a whole window without building it). So a reader holds one window (+1 piece) and
reads each piece once an epoch. Without --shuffle the base order is 0..N-1 (pieces in order, windows of a batch).

Ranks: rank r takes the contiguous share [N*r//R, N*(r+1)//R) of the base order: sizes differ by at most one
item, no padding, no duplicate, and the shares together are the dataset. Workers: DataLoader sends batch k of
an epoch to worker k % W (its round robin for a map-style dataset), so the share's pieces are dealt to the
workers in turn and batch k is made of worker k % W's rows, in the base order (without --shuffle too: W streams
of pieces interleaved, as an IterableDataset split by get_worker_info reads, not 0..N-1, which would make every
worker read every piece: 0.3x the throughput at 2 workers); a worker whose rows
run out near the end of the share tops its batch up from the next workers' (the emitted batches stay one
permutation of the share: exactness first, locality second). Each piece is then read by one worker but those
few where a share starts or ends, or a worker's rows run out, and the batches of a resumed epoch (its first
batch goes to worker 0).
"""
import collections

import torch
from torch.utils.data import BatchSampler, Sampler


def share_bounds(length, rank, world):
    """[lo, hi): rank's contiguous share of LENGTH items over WORLD ranks (sizes differ by at most one)."""
    return length * rank // world, length * (rank + 1) // world


def window_bounds(sizes, window_rows):
    """[(first, end)] positions of consecutive pieces (SIZES in order) grouped into windows of >= window_rows
    rows (the last one may hold fewer)."""
    bounds, first, held = [], 0, 0
    for k, size in enumerate(sizes):
        held += size
        if held >= window_rows:
            bounds.append((first, k + 1))
            first, held = k + 1, 0
    if first < len(sizes):
        bounds.append((first, len(sizes)))
    return bounds


class _Epoch:
    """One epoch of one rank's share, planned at the epoch's start from two draws of the loader's generator (the
    pieces' permutation, the windows' seeds); a window's rows are built only when they are read."""

    def __init__(self, s):
        n = len(s.sizes)
        self.order = torch.randperm(n, generator=s.generator) if s.shuffle else torch.arange(n)
        self.sizes = s.sizes[self.order]
        self.firsts = s.starts[self.order]
        bounds = window_bounds(self.sizes.tolist(), s.window_rows)
        seeds = torch.empty(len(bounds), dtype=torch.int64)
        self.seeds = seeds.random_(generator=s.generator).tolist() if s.shuffle else None
        ends = torch.cumsum(self.sizes, 0).tolist()
        self.lo, self.hi, self.shuffle = s.lo, s.hi, s.shuffle
        self.workers = s.workers
        # the share's windows: (first piece, end piece, first base position, end base position, seed index)
        self.windows = [(a, b, ends[a - 1] if a else 0, ends[b - 1], i) for i, (a, b) in enumerate(bounds)
                        if (ends[a - 1] if a else 0) < self.hi and ends[b - 1] > self.lo]
        self.dealt_from = self.windows[0][0] if self.windows else 0  # piece p goes to worker (p - dealt_from) % W
        self.counts = self._counts()
        self.totals = self.counts.sum(0).tolist() if self.windows else [0] * self.workers

    def _counts(self):
        """[window, worker] -> the rows of that window in that worker's part of the share."""
        counts = torch.zeros(len(self.windows), self.workers, dtype=torch.int64)
        for i, (a, b, start, end, _) in enumerate(self.windows):
            if start < self.lo or end > self.hi:  # cut by the share's bounds: which rows fell in is the shuffle's
                counts[i] = torch.bincount(self.rows(i)[1], minlength=self.workers)
            else:
                counts[i].index_add_(0, self._dealt(a, b), self.sizes[a:b])
        return counts

    def _dealt(self, a, b):
        return (torch.arange(a, b) - self.dealt_from) % self.workers

    def rows(self, i):
        """(the share's rows of window i in the base order, the worker each is dealt to)."""
        a, b, start, end, seed = self.windows[i]
        lengths = self.sizes[a:b]
        offsets = torch.cumsum(lengths, 0) - lengths
        rows = torch.repeat_interleave(self.firsts[a:b] - offsets, lengths) + torch.arange(end - start)
        workers = torch.repeat_interleave(self._dealt(a, b), lengths)
        if self.shuffle:
            perm = torch.randperm(end - start, generator=torch.Generator().manual_seed(self.seeds[seed]))
            rows, workers = rows[perm], workers[perm]
        cut = slice(max(self.lo - start, 0), min(self.hi, end) - start)
        return rows[cut], workers[cut]


def batch_takes(left, k, batch_size):
    """Batch k's [(worker, rows)]: batch_size rows of worker k % W's (LEFT: each worker's rows not yet taken,
    updated), topped up from the next workers' when its own run out."""
    takes, need, workers = [], batch_size, len(left)
    for step in range(workers):
        w = (k + step) % workers
        n = min(need, left[w])
        if n:
            takes.append((w, n))
            left[w] -= n
            need -= n
        if not need:
            break
    return takes


def taken_after(totals, batches, batch_size):
    """Each worker's rows taken by the first BATCHES batches (whole rounds at once while no worker runs short)."""
    left, workers = list(totals), len(totals)
    rounds = min(batches // workers, min(left) // batch_size)
    left = [n - rounds * batch_size for n in left]
    for k in range(rounds * workers, batches):
        batch_takes(left, k, batch_size)
    return [t - n for t, n in zip(totals, left)]


class _Streams:
    """Each worker's rows of the share in the base order, built a window at a time as batches need them."""

    def __init__(self, epoch):
        self.epoch, self.next_window, self.skipped_windows = epoch, 0, 0
        self.parts = [collections.deque() for _ in range(epoch.workers)]
        self.held = [0] * epoch.workers
        self.to_drop = [0] * epoch.workers  # rows a resumed epoch took already

    def drop(self, taken):
        """Pass over TAKEN rows of each worker: whole windows without building them, the rest as read."""
        self.to_drop = list(taken)
        counts = self.epoch.counts.tolist()
        while self.next_window < len(counts) and all(c <= d for c, d in zip(counts[self.next_window], self.to_drop)):
            self.to_drop = [d - c for c, d in zip(counts[self.next_window], self.to_drop)]
            self.next_window += 1
            self.skipped_windows += 1

    def take(self, w, n):
        """The next N rows of worker W's, as a list of tensors."""
        while self.held[w] < n:
            self._read_window()
        out, self.held[w] = [], self.held[w] - n
        while n:
            part = self.parts[w][0]
            if len(part) <= n:
                out.append(self.parts[w].popleft())
            else:
                out.append(part[:n])
                self.parts[w][0] = part[n:]
            n -= len(out[-1])
        return out

    def _read_window(self):
        rows, workers = self.epoch.rows(self.next_window)
        self.next_window += 1
        for w in range(self.epoch.workers):
            mine = rows if self.epoch.workers == 1 else rows[workers == w]
            drop = min(self.to_drop[w], len(mine))
            self.to_drop[w] -= drop
            if len(mine) > drop:
                self.parts[w].append(mine[drop:])
                self.held[w] += len(mine) - drop


class PieceSampler(Sampler):
    """Indices of a piece-backed dataset: rank's share of the epoch's order (module docstring), batch_size at a
    time dealt to `workers` DataLoader workers. Draws from GENERATOR at the start of each epoch's iteration."""

    def __init__(self, piece_starts, length, generator, shuffle, window_rows, workers=1, rank=0, world=1,
                 batch_size=1):
        self.starts = torch.as_tensor(piece_starts, dtype=torch.int64)
        self.sizes = torch.diff(self.starts, append=torch.tensor([length], dtype=torch.int64))
        self.generator, self.shuffle, self.window_rows = generator, shuffle, max(1, int(window_rows))
        self.workers, self.batch_size = max(1, workers), batch_size
        self.lo, self.hi = share_bounds(length, rank, world)
        self.skipped_windows = 0  # windows the last resumed epoch passed over without building them

    def __len__(self):
        return self.hi - self.lo

    def __iter__(self):
        for batch in self.batches():
            yield from batch

    def batches(self, skip=0, drop_last=False):
        """The epoch's batches (lists of indices) after the first SKIP, which are passed over, not built."""
        epoch = _Epoch(self)
        streams = _Streams(epoch)
        total, left = len(self), list(epoch.totals)
        count = total // self.batch_size if drop_last else -(-total // self.batch_size)
        if skip:
            taken = taken_after(epoch.totals, min(skip, count), self.batch_size)
            left = [t - n for t, n in zip(epoch.totals, taken)]
            streams.drop(taken)
        self.skipped_windows = streams.skipped_windows
        for k in range(skip, count):
            parts = [p for w, n in batch_takes(left, k, self.batch_size) for p in streams.take(w, n)]
            yield torch.cat(parts).tolist()


class PieceBatches(BatchSampler):
    """A PieceSampler's batches for DataLoader(batch_sampler=…); its next iteration first passes over `skip`
    batches (a resumed epoch), as data/loader.py's Skipping does, but without building whole windows."""

    def __init__(self, sampler, drop_last):
        super().__init__(sampler, sampler.batch_size, drop_last)
        self.skip = 0

    def __iter__(self):  # a generator: DataLoader with workers calls iter() twice, and advances the second
        skip, self.skip = self.skip, 0
        yield from self.sampler.batches(skip, self.drop_last)
