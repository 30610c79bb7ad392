"""Datasets over held tensors and PyTorch's DataLoader from the shell:
`torch data tensors X [Y…]` -> data://, `torch data loader D [--batch_size 1] [--shuffle] …` -> loader://,
`torch data next L` -> one handle per batch field.

The loader is torch.utils.data.DataLoader with PyTorch's defaults and names; with --seed S its batches
are those of `DataLoader(ds, batch_size, shuffle=True, generator=torch.Generator().manual_seed(S))`,
reshuffled every epoch (without --seed, S is drawn from the global RNG when the loader is made, so
`torch manual_seed` makes it repeatable). `data next` exits 1 silently at the end of an epoch (code
end_of_epoch); the call after that starts the next epoch, so this is a bash training loop:

    while b=$(torch data next $L); do torch train_step $m $o $b; done

`data next` is an iterator, as Python's `for b in loader` is: each call frees the batch the call before
handed out (unless that one had --keep, or was passed on), so the loop holds one batch at a time.
"""
import weakref

import torch
from torch.utils.data import TensorDataset

from torchsh.data.loader import Loader
from torchsh.errors import TorchshError, bad_argument
from torchsh.history import datasets as history_data
from torchsh.verbs import verb


@verb("data.tensors(Tensor[] tensors) -> Dataset", category="files", form=history_data.tensors,
      examples=("torch data tensors $(torch randn 8 2) $(torch randn 8 1)",), read_only=True)
def tensors(ctx, tensors):
    """A TensorDataset over held tensors: item i is (X[i], Y[i], …); all share their first dimension."""
    sizes = [t.shape[0] if t.dim() else None for t in tensors]
    if None in sizes or len(set(sizes)) != 1:
        raise TorchshError("shape_mismatch", "the tensors of a dataset need the same first dimension, got %s"
                           % " ".join("[]" if s is None else str(s) for s in sizes),
                           "item i is (X[i], Y[i], …): give tensors of N rows each")
    return TensorDataset(*tensors)


@verb("data.loader(Dataset dataset, *, int batch_size=1, bool shuffle=False, bool drop_last=False, int? seed=None, "
      "int num_workers=0, int? shuffle_buffer=None) -> Loader", category="files",
      form=history_data.loader, no_form=history_data.WORKERS,
      examples=("torch data loader $(torch data tensors $(torch randn 8 2)) --batch_size 4 --shuffle --seed 0",))
def loader(ctx, dataset, batch_size=1, shuffle=False, drop_last=False, seed=None, num_workers=0, shuffle_buffer=None):
    """torch.utils.data.DataLoader over a dataset: batches of --batch_size, reshuffled every epoch with --shuffle.

    Args:
        seed: seeds the loader's generator (the shuffle order); without it, one drawn from the global RNG
        num_workers: worker processes that load batches (0: in the daemon's request)
        shuffle_buffer: with --shuffle over a streamed dataset (Parquet row groups, Arrow batches, tar shards),
            the rows shuffled together: pieces permuted, then rows within windows of at least this many rows
            (default: the whole dataset, a full shuffle, when the memory budget admits it); each worker's cache
            holds a window, within the memory budget
    """
    if batch_size < 1:
        raise bad_argument("--batch_size must be at least 1, got %d" % batch_size)
    if num_workers < 0:
        raise bad_argument("--num_workers must be 0 or more, got %d" % num_workers)
    if shuffle_buffer is not None and (not shuffle or shuffle_buffer < 1):
        raise bad_argument("--shuffle_buffer is the rows --shuffle shuffles together: give --shuffle and 1 or more, "
                           "got %s%s" % (shuffle_buffer, "" if shuffle else " without --shuffle"))
    budget = getattr(getattr(ctx, "app", None), "memory", None)  # the daemon's; none where a session rebuilds it
    return Loader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, seed=seed,
                  num_workers=num_workers, shuffle_buffer=shuffle_buffer, budget=budget)


@verb("data.next(Loader loader, *, bool keep=False) -> Tensor[]", category="files",
      writes=("loader",), form=history_data.next_batch,
      examples=("torch data next $(torch data loader $(torch data tensors $(torch randn 8 2)) --batch_size 4)",))
def next_batch(ctx, loader, keep=False):
    """The loader's next batch, one handle per field (one a line); exit 1, silent, at the end of an epoch.

    The call after the end starts the next epoch (reshuffled with --shuffle), so
    `while b=$(torch data next $L); do …; done` runs one epoch. An iterator: each call first frees the
    batch the one before it handed out, so the loop holds one batch at a time; --keep keeps this batch past
    the next call (until `torch free`). A batch that was passed on is not freed either: one a running job
    uses, or one `torch keep` moved out of its scope.

    Args:
        keep: this batch outlives the next `data next` (free it yourself)
    """
    _free_handed_out(ctx, loader)
    batch = loader.next_batch()
    if batch is None:
        raise TorchshError("end_of_epoch", "epoch %d of the loader is over" % loader.epoch,
                           "the next call starts epoch %d" % (loader.epoch + 1))
    handles = [ctx.put(t) for t in (batch if isinstance(batch, (list, tuple)) else [batch])]
    if not keep:  # (handle, the object, the scope it was made in): freed by the next call if still so
        loader.handed_out = [(h, weakref.ref(ctx.registry.get(h)), ctx.registry.entry(h).scope) for h in handles]
    return Handles(handles)


class Handles(list):
    """Handles the verb registered itself: one a line on a terminal (as a Tensor[] result prints), a JSON list."""

    def text(self):
        return "".join(h + "\n" for h in self)


def _free_handed_out(ctx, loader):
    """Free the batch the loader's previous `data next` handed out, but what was passed on since: a handle
    freed already, one a running job uses (in_use), or one `torch keep` moved to another scope."""
    handed_out, loader.handed_out = loader.handed_out, None
    for handle, ref, scope in handed_out or ():
        if not ctx.registry.holds(handle):
            continue
        entry = ctx.registry.entry(handle)
        if entry.obj is not ref() or entry.scope != scope:
            continue
        try:
            ctx.app.jobs.refuse_freeing(ctx.registry, [handle])
            ctx.registry.free([handle])
        except TorchshError:  # in use by a job, or freed meanwhile: it stays as it is
            continue
