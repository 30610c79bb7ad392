"""A rank's share of a `loader://` in `fit --nproc_per_node N`: PyTorch's DistributedSampler under the
loader's batch size, with the Loader's interface (next_batch, position, state_dict) so fit's loop and
checkpoints use it unchanged.

Training: DistributedSampler(dataset, world, rank, shuffle=loader.shuffle, seed=loader.seed,
drop_last=loader.drop_last), set_epoch(epoch) at the start of every epoch, batches of loader.batch_size
per rank (the global batch is world x batch_size), the last one dropped when incomplete with drop_last,
as `DataLoader(ds, batch_size, sampler=DistributedSampler(…), drop_last=…)` in a torchrun script.
Without drop_last the sampler pads the epoch to a multiple of the world size with samples from its
start (PyTorch's semantics), so every rank takes the same number of batches.

A piece-backed dataset (data/pieces.py) takes data/piecesampler.py's rank share instead: rank r takes the
contiguous share [N*r//R, N*(r+1)//R) of the epoch's order (the pieces permuted and shuffled in windows from a
generator seeded seed + epoch on every rank), sizes differing by at most one item: no padding, no duplicate.
The ranks may then differ by one batch; since every rank must step together, the short rank takes its last
step on a copy of its last batch flagged uncounted (`counted` False), which fit's loop weights 0: no gradient
and no loss or metric from it, as DDP's Join shadows a finished rank with zero gradients. With drop_last every
rank takes as many batches as the shortest share holds whole.

Validation (ValShare): the ranks split the data without padding (rank r takes samples r, r+W, …; of a
piece-backed dataset the contiguous share r), so the summed loss and metrics are those of the whole set, each
sample once.
"""
import torch
from torch.utils.data import DataLoader, DistributedSampler, SequentialSampler, Subset

from torchsh.data import pieces
from torchsh.data.loader import EpochBatches, Skipping, worker_options
from torchsh.data.piecesampler import PieceBatches, PieceSampler, share_bounds
from torchsh.data.workererrors import WorkerReads

STATE_FORMAT = "torchsh-dist-loader-1"


def _data_loader(dataset, sampler, batch_size, drop_last, num_workers):
    batches = Skipping(sampler, batch_size, drop_last)
    # workers from a forkserver, not fork() of a rank (gloo's threads); they end with the rank
    return batches, DataLoader(WorkerReads(dataset) if num_workers else dataset, batch_sampler=batches,
                               num_workers=num_workers,
                               **worker_options(num_workers))


class DistLoader(EpochBatches):
    """One rank's batches of a loader, epoch after epoch, resumable mid-epoch."""

    def __init__(self, dataset, batch_size, shuffle, drop_last, seed, num_workers, world, rank, epoch=0,
                 shuffle_buffer=None):
        super().__init__(epoch)  # epochs finished: the sampler's epoch (its shuffle is seed + epoch)
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.seed, self.num_workers, self.world = seed, num_workers, world
        starts = pieces.piece_starts(dataset)
        self.generator = None if starts is None else torch.Generator()  # seeded seed + epoch at each epoch
        if starts is None:
            self.sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=shuffle, seed=seed,
                                              drop_last=drop_last)
            self.batches, self.loader = _data_loader(dataset, self.sampler, batch_size, drop_last, num_workers)
            self.steps = len(self.loader)
            return
        whole = shuffle and shuffle_buffer is None  # the one-process loader's default: one window, a full shuffle
        window = max(len(dataset) if whole else shuffle_buffer or 0, batch_size)
        self.sampler = PieceSampler(starts, len(dataset), self.generator, shuffle, window, workers=num_workers,
                                    rank=rank, world=world, batch_size=batch_size)
        self.batches = PieceBatches(self.sampler, drop_last)
        self.loader = DataLoader(WorkerReads(dataset) if num_workers else dataset, batch_sampler=self.batches,
                                 num_workers=num_workers, **worker_options(num_workers))
        self.steps = rank_steps(len(dataset), world, batch_size, drop_last)

    def __len__(self):
        return self.steps  # every rank's: ranks step together

    def _start(self):
        skip = self.position if self.in_epoch else 0  # a resumed epoch: skip what was taken
        if self.generator is None:
            self.sampler.set_epoch(self.epoch)
            self.batches.skip = skip
            self.in_epoch, self._it = True, iter(self.loader)
            return
        self.generator.manual_seed(self.seed + self.epoch)
        self.in_epoch, self._it = True, self._share_batches(skip)

    def _share_batches(self, skip):
        """This rank's piece share from batch SKIP on, then copies of its last batch, uncounted, up to len(self)."""
        real = min(len(self.batches), len(self))
        self.batches.skip = min(skip, real - 1) if real else 0  # a resume past them still needs the last one
        last, taken = None, self.batches.skip
        for batch in self.loader:
            last, taken = batch, taken + 1
            if taken > skip:
                self.counted = True
                yield batch
            if taken == real:
                break
        if len(self) > max(taken, skip) and last is None:  # a share without a row: the dataset's first item
            last = next(iter(DataLoader(Subset(self.dataset, [0]), batch_size=1)))
        for _ in range(len(self) - max(taken, skip)):
            self.counted = False
            yield last
        self.counted = True

    def state_dict(self):
        return {"format": STATE_FORMAT, "epoch": self.epoch, "position": self.position, "in_epoch": self.in_epoch,
                "seed": self.seed, "batches": len(self), "world": self.world}

    def load_state_dict(self, state):
        if state.get("format") != STATE_FORMAT:
            raise ValueError("it was saved by a one-process fit; a --nproc_per_node run resumes its own checkpoints")
        if state["world"] != self.world or state["batches"] != len(self):
            raise ValueError("it was saved by %d ranks with %d batches per epoch, this run has %d with %d"
                             % (state["world"], state["batches"], self.world, len(self)))
        self._resume(state)


def rank_steps(length, world, batch_size, drop_last):
    """The batches every rank takes in an epoch of a piece share: the longest share's (the shorter ranks end on an
    uncounted copy), with drop_last the shortest share's whole batches."""
    lo, hi = share_bounds(length, 0, world)
    shortest, longest = hi - lo, -(-length // world)
    return shortest // batch_size if drop_last else -(-longest // batch_size)


class ValShare:
    """One rank's share of a validation loader: samples rank, rank+W, … in order, every sample once overall."""

    def __init__(self, dataset, batch_size, num_workers, world, rank):
        # a piece-backed dataset's share is contiguous (its pieces read once, by one rank), others' strided
        pieced = pieces.piece_starts(dataset) is not None
        share = Subset(dataset, range(*share_bounds(len(dataset), rank, world)) if pieced
                       else range(rank, len(dataset), world))
        _, self.loader = _data_loader(share, SequentialSampler(share), batch_size, False, num_workers)
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, False, False
        self.num_workers, self.seed = num_workers, None
        # the most batches any rank takes: ranks that take fewer run uncounted ones to keep in step (FSDP)
        most = -(-len(dataset) // world)
        self.most_batches = -(-most // batch_size)
        self.epoch = 0

    def __len__(self):
        return len(self.loader)

    def batches(self):
        """(batch, counted) for one pass: this rank's batches, then repeats of a batch up to most_batches."""
        last, taken = None, 0
        for batch in self.loader:
            last, taken = batch, taken + 1
            yield batch, True
        if last is None and len(self.dataset):
            last = next(iter(DataLoader(Subset(self.dataset, [0]), batch_size=1)))
        for _ in range(self.most_batches - taken):
            yield last, False
        self.epoch += 1

    def state_dict(self):
        return {"format": STATE_FORMAT + "-val", "epoch": self.epoch}

    def load_state_dict(self, state):
        self.epoch = state.get("epoch", 0)
