"""`loader://`: PyTorch's DataLoader, with an epoch counter, a position in the epoch, and a state that
resumes mid-epoch bit for bit.

The batches are exactly those of `DataLoader(ds, batch_size, shuffle=True,
generator=torch.Generator().manual_seed(S))` iterated epoch after epoch (reshuffled every epoch, as
PyTorch does): the loader is built the way DataLoader builds itself (RandomSampler or
SequentialSampler, BatchSampler) with one generator shared by the sampler and the DataLoader.
To resume, the state keeps the generator's state at the start of the current epoch and the number
of batches taken; restoring replays the epoch's sampler (indices only, no data fetched) up to there.
With --num_workers the workers persist from epoch to epoch (persistent_workers), with the same batches.

A piece-backed dataset (data/pieces.py: Parquet row groups, Arrow batches, tar shards) is read in the order of
data/piecesampler.py instead: with --shuffle its pieces permuted and its rows shuffled within windows of
--shuffle_buffer rows, batches dealt to the workers piece by piece (with or without --shuffle); its pieces' caches are sized for a window per
worker, once the memory budget admits it. Without --shuffle_buffer the window is the whole dataset, a full shuffle
as RandomSampler's (a set bigger than the budget is refused, naming --shuffle_buffer); a dataset whose pieces
keep no cache (a row read alone costs little: tar shards, token files, chat lines) takes RandomSampler itself. The resume is the same
(generator state at the epoch's start + batches taken), and passes over whole windows without building them.
"""
import functools
import multiprocessing
import os

import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

from torchsh import orphans
from torchsh.data import batches, pieces
from torchsh.data.piecesampler import PieceBatches, PieceSampler
from torchsh.data.workererrors import WorkerError, WorkerReads
from torchsh.errors import TorchshError

STATE_FORMAT = "torchsh-loader-1"


class Skipping(BatchSampler):
    """A BatchSampler whose next iteration first drops `skip` batches of indices (a resumed epoch)."""

    def __init__(self, sampler, batch_size, drop_last):
        super().__init__(sampler, batch_size, drop_last)
        self.skip = 0

    def __iter__(self):
        skip, self.skip = self.skip, 0
        it = super().__iter__()
        for _ in range(skip):
            next(it, None)
        yield from it


def _end_with(pid, worker_id):
    """A worker's init: end this worker within a second of process PID's end, however it ended."""
    orphans.end_with(pid, lambda: os._exit(0))


def worker_options(num_workers, **more):
    """DataLoader's options for NUM_WORKERS worker processes (none for 0). They start from a forkserver, not by
    fork(): a fork of the daemon would copy its threads' locks mid-use and every socket it holds (the listening
    one, clients' connections) into each worker. Their parent is then the forkserver, so PyTorch's own watchdog
    (parent pid changed) cannot see this process die: _end_with does, or they would outlive a `kill -9` of it.
    The forkserver imports torch and the datasets once, when it starts: a worker forked from it is ready at once
    (importing them in each worker cost ~1.1 s a loader on this machine)."""
    if not num_workers:
        return {}
    return dict(multiprocessing_context=_FORKSERVER, worker_init_fn=functools.partial(_end_with, os.getpid()), **more)


_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(["torch", "torchsh.data.openers", "torchsh.data.loader"])


def batch_sampler(dataset, batch_size, shuffle, drop_last, generator, shuffle_buffer=None, num_workers=0, budget=None):
    """The Loader's batch sampler: DataLoader's own (RandomSampler or SequentialSampler in a BatchSampler) but for
    a piece-backed dataset, whose PieceSampler's windows of shuffle_buffer rows (at least a batch) the pieces'
    caches are made to hold, one per worker, once BUDGET (the memory budget, or None) admits them."""
    starts = pieces.piece_starts(dataset)
    if starts is None or shuffle_buffer is None and not pieces.cached(dataset):
        sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        return Skipping(sampler, batch_size, drop_last)
    whole = shuffle and shuffle_buffer is None  # PyTorch's default: every row shuffled with every other
    window = max(len(dataset) if whole else shuffle_buffer or 0, batch_size)
    try:
        pieces.reserve(dataset, window * max(num_workers, 1), budget)
    except TorchshError as e:
        if e.code != "out_of_memory":
            raise
        raise TorchshError(e.code, e.message, "give --shuffle_buffer N: rows shuffled together in windows of N, the "
                           "pieces permuted every epoch (the cache holds a window per worker)") from None
    sampler = PieceSampler(starts, len(dataset), generator, shuffle, window, workers=num_workers,
                           batch_size=batch_size)
    return PieceBatches(sampler, drop_last)


class EpochBatches:
    """Batches one at a time, epoch after epoch, with where the current epoch is: a subclass's _start() sets
    self._it to the epoch's iterator (its batches from self.position on when self.in_epoch: a resumed epoch)."""
    counted = True  # False while the batch just given only keeps a rank in step (train/distributed/shares.py)

    def __init__(self, epoch=0):
        self.epoch = epoch       # epochs finished
        self.position = 0        # batches taken in the current epoch
        self.in_epoch = False    # an epoch has started and not ended
        self._it = None

    def next_batch(self):
        """The next batch of the current epoch (starting one if none is running), or None at its end."""
        if self._it is None:
            self._start()
        try:
            batch = next(self._it)
        except WorkerError as e:  # a worker's TorchshError (a damaged row group): itself, not torch_error
            raise e.torchsh_error() from None
        except StopIteration:
            self._it, self.in_epoch, self.position = None, False, 0
            self.epoch += 1
            return None
        self.position += 1
        return batch

    def _resume(self, state):
        """Where STATE (a state_dict) was: its epoch and its position in it."""
        self._it = None
        self.epoch, self.position, self.in_epoch = state["epoch"], state["position"], state["in_epoch"]


class Loader(EpochBatches):
    """torch.utils.data.DataLoader with PyTorch's defaults and names, iterated one batch at a time."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, seed=None, num_workers=0,
                 shuffle_buffer=None, budget=None):
        super().__init__()
        if seed is None:  # PyTorch draws from the global RNG; drawing the seed from it once keeps
            seed = int(torch.empty((), dtype=torch.int64).random_().item())  # `manual_seed` repeatable
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)
        self.batches = batch_sampler(dataset, batch_size, shuffle, drop_last, self.generator, shuffle_buffer,
                                     num_workers, budget)
        # Persistent: the workers live as long as the loader, not an epoch (starting them cost seconds an epoch)
        workers = worker_options(num_workers, persistent_workers=True)
        fast = batches.gathered(dataset)  # a table's batches in one gather a field (in each worker too)
        if fast is not None:
            workers["collate_fn"] = batches.gathered_collate
        read = dataset if fast is None else fast
        read = WorkerReads(read) if num_workers else read
        self.loader = DataLoader(read, batch_sampler=self.batches, num_workers=num_workers, generator=self.generator,
                                 **workers)
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.num_workers, self.shuffle_buffer = num_workers, shuffle_buffer
        # a piece-backed dataset's order depends on its window and its workers: a resume needs the same
        self._order = ({"window_rows": self.batches.sampler.window_rows, "workers": self.batches.sampler.workers}
                       if isinstance(self.batches, PieceBatches) and shuffle else None)
        self._epoch_start = None  # the generator's state when the current epoch started
        self._workers_started = False  # the persistent workers' iterator exists (DataLoader keeps it)
        self.handed_out = None   # the last `data next`'s batch, which the next one frees (verbs/loader.py)

    def __len__(self):
        return len(self.loader)  # batches per epoch

    def _start(self):
        if self.in_epoch:  # resumed mid-epoch: replay this epoch's shuffle, skip what was taken
            self.generator.set_state(self._epoch_start)
            self.batches.skip = self.position
        else:
            self._epoch_start = self.generator.get_state()
            self.in_epoch, self.position = True, 0
        if self.num_workers and self._workers_started:
            # iter() resets the persistent workers' iterator, which draws no base seed from the generator as a
            # new one would: drawn here, so every epoch's shuffle is the one DataLoader without workers makes
            torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        self._it = iter(self.loader)
        self._workers_started = bool(self.num_workers)

    def state_dict(self):
        generator = self._epoch_start if self.in_epoch else self.generator.get_state()
        return {"format": STATE_FORMAT, "epoch": self.epoch, "position": self.position,
                "in_epoch": self.in_epoch, "generator": generator.clone(), "seed": self.seed,
                "batches": len(self), **({"order": self._order} if self._order else {})}

    def load_state_dict(self, state):
        if state.get("format") != STATE_FORMAT:
            raise ValueError("not a torchsh loader state")
        if state["batches"] != len(self):
            raise ValueError("the saved loader had %d batches per epoch, this one %d" % (state["batches"], len(self)))
        if state.get("order") != self._order:
            raise ValueError("the saved loader's order was %s, this one's %s (--shuffle_buffer, --num_workers)"
                             % (state.get("order"), self._order))
        self._resume(state)
        if self.in_epoch:
            self._epoch_start = state["generator"].clone()
        else:
            self.generator.set_state(state["generator"])
