"""A rank's share of a `loader://` in `fit --nproc_per_node N`: PyTorch's DistributedSampler under the
loader's batch size, with the Loader's interface (next_batch, position, state_dict) so fit's loop and
checkpoints use it unchanged.

Training: DistributedSampler(dataset, world, rank, shuffle=loader.shuffle, seed=loader.seed,
drop_last=loader.drop_last), set_epoch(epoch) at the start of every epoch, batches of loader.batch_size
per rank (the global batch is world x batch_size), the last one dropped when incomplete with drop_last,
as `DataLoader(ds, batch_size, sampler=DistributedSampler(…), drop_last=…)` in a torchrun script.
Without drop_last the sampler pads the epoch to a multiple of the world size with samples from its
start (PyTorch's semantics), so every rank takes the same number of batches.

Validation (ValShare): the ranks split the data without padding (rank r takes samples r, r+W, …), so the
summed loss and metrics are those of the whole set, each sample once.
"""
from torch.utils.data import DataLoader, DistributedSampler, SequentialSampler, Subset

from torchsh.data.loader import EpochBatches, Skipping, worker_options

STATE_FORMAT = "torchsh-dist-loader-1"


def _data_loader(dataset, sampler, batch_size, drop_last, num_workers):
    batches = Skipping(sampler, batch_size, drop_last)
    # workers from a forkserver, not fork() of a rank (gloo's threads); they end with the rank
    return batches, DataLoader(dataset, batch_sampler=batches, num_workers=num_workers,
                               **worker_options(num_workers))


class DistLoader(EpochBatches):
    """One rank's batches of a loader, epoch after epoch, resumable mid-epoch."""

    def __init__(self, dataset, batch_size, shuffle, drop_last, seed, num_workers, world, rank, epoch=0):
        super().__init__(epoch)  # epochs finished: the sampler's epoch (its shuffle is seed + epoch)
        self.sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=shuffle, seed=seed,
                                          drop_last=drop_last)
        self.batches, self.loader = _data_loader(dataset, self.sampler, batch_size, drop_last, num_workers)
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.seed, self.num_workers, self.world = seed, num_workers, world

    def __len__(self):
        return len(self.loader)

    def _start(self):
        self.sampler.set_epoch(self.epoch)
        self.batches.skip = self.position if self.in_epoch else 0  # a resumed epoch: skip what was taken
        self.in_epoch, self._it = True, iter(self.loader)

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


class ValShare:
    """One rank's share of a validation loader: samples rank, rank+W, … in order, every sample once overall."""

    def __init__(self, dataset, batch_size, num_workers, world, rank):
        share = Subset(dataset, range(rank, len(dataset), world))
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
