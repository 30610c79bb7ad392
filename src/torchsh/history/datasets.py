"""Datasets and loaders in the script: `data open` over .npy files, `data split`, `data loader` and
`data next` (the end of an epoch included), written as the PyTorch torchsh runs, so the batches are the same.

`data open x.npy y.npy` is a TensorDataset over the arrays, each read from its path after its sha256 check
(files.py): torchsh maps the files and copies rows out of the map, the same values. A loader is torchsh's
(data/loader.py) in a dozen lines, `_Loader`: PyTorch's DataLoader over one generator shared by its sampler,
its epochs one after another, next() None at an epoch's end, as `torch data next` exits 1 there.

A dataset PyTorch alone does not read as torchsh did (a CSV table with its label names, an image folder, a
dataset `data transform` standardized) is written as its values: its items as the daemon holds them now,
stacked field by field into a TensorDataset read from the sidecar (or literals when small), with the files'
sha256 as a comment. Items are what a loader's batches are made of, so the batches are the same bit for bit.
A form gives None for what it cannot write (a dataset freed since, worker processes): forms.py refuses it with
the reason the verb's row states (NOT_HELD, WORKERS).
"""
import torch

from torchsh.data import pieces
from torchsh.data.piecesampler import PieceBatches
from torchsh.history import files

VALUES_MAX = files.VALUES_MAX  # bytes of a dataset written as its values, at most


def opened(e, r):
    read = e.made.get("files")
    options = {k: v for k, v in e.args.items() if k != "files" and v not in (None, False)}
    if not read or options or any(not f["path"].endswith(".npy") or files.sha256(f["path"]) != f["sha256"]
                                  for f in read):
        return as_values(e, r)
    r.helpers.update(("_checked", "_numpy"))
    arrays = ", ".join("torch.from_numpy(numpy.load(%s, allow_pickle=False))" % files.checked(f) for f in read)
    return [files.comment(f) for f in read] + ["%s = torch.utils.data.TensorDataset(%s)" % (r.outs(e), arrays)]


def split(e, r):
    a = e.args
    if _held_stream(r, a["dataset"]):  # its parts' rows were put in file order: not random_split's order
        return None
    lengths = [a[k] for k in ("length1", "length2", "length3", "length4", "length5") if a.get(k) is not None]
    if all(float(x).is_integer() for x in lengths) and sum(lengths) > 1:
        lengths = [int(x) for x in lengths]
    generator = "torch.Generator().manual_seed(%d)" % a["seed"] if a.get("seed") is not None else "torch.default_generator"
    return ["%s = torch.utils.data.random_split(%s, %s, generator=%s)"
            % (r.outs(e) + ("," if len(e.outputs) == 1 else ""), r.lit(a["dataset"]), r.lit(lengths), generator)]


def loader(e, r):
    a = e.args
    if a.get("num_workers") or a.get("shuffle_buffer") or _reads_by_pieces(e, r):
        return None
    r.helpers.add("_Loader")
    options = "".join(", %s=%s" % (k, r.lit(a[k])) for k in ("batch_size", "shuffle", "drop_last", "seed") if k in a)
    return ["%s = _Loader(%s%s)" % (r.outs(e), r.lit(a["dataset"]), options)]


def _held_stream(r, handle):
    """Whether HANDLE names a dataset still held whose pieces are cached (a stream read by pieces)."""
    held = r.registry is not None and isinstance(handle, str) and r.registry.holds(handle)
    return held and pieces.cached(r.registry.entry(handle).obj)


def _reads_by_pieces(e, r):
    """Whether the loader e made (still held) reads its dataset by pieces: its order is not _Loader's."""
    held = r.registry is not None and len(e.outputs) == 1 and r.registry.holds(e.outputs[0])
    return held and isinstance(getattr(r.registry.entry(e.outputs[0]).obj, "batches", None), PieceBatches)


def next_batch(e, r):
    if e.exit:  # the epoch's end: the loader starts the next one at the call after
        return ["%s.next()  # the end of the epoch" % r.lit(e.args["loader"])]
    return ["%s = %s.next()" % (r.outs(e) + ("," if len(e.outputs) == 1 else ""), r.lit(e.args["loader"]))]


def as_values(e, r):
    """e's dataset written as its items, as the daemon holds it now; None when it is no longer held, its items
    are not tuples of tensors of one shape per field, or it is over VALUES_MAX."""
    entry = r.registry.entry(e.outputs[0]) if r.registry is not None and len(e.outputs) == 1 and \
        r.registry.holds(e.outputs[0]) else None
    if entry is None:
        return None
    try:
        fields = _stacked(entry.obj)
    except (TypeError, ValueError, RuntimeError, IndexError):
        return None
    if fields is None:
        return None
    source = "the daemon's `torch %s`" % e.op.replace(".", " ")  # a name, never raw text (persist._entry_of)
    return [files.comment(f) for f in e.made.get("files") or ()] + [
        "%s = torch.utils.data.TensorDataset(%s)  # its items as %s gave them"
        % (r.outs(e), ", ".join(r.tensor_literal(t) for t in fields), source)]


def _stacked(dataset):
    """[each field of dataset's items, stacked item first], or None when too large to write as values."""
    n = len(dataset)
    first = dataset[0] if n else None
    if not isinstance(first, tuple) or not all(isinstance(t, torch.Tensor) for t in first):
        return None
    if n * sum(t.numel() * t.element_size() for t in first) > VALUES_MAX:
        return None
    items = [dataset[i] for i in range(n)]
    return [torch.stack([item[k] for item in items]) for k in range(len(first))]


def tensors(e, r):
    return ["%s = torch.utils.data.TensorDataset(%s)" % (r.outs(e), ", ".join(r.lit(t) for t in e.args["tensors"]))]


# why a form gave None: what the rows' no_form says (verbs/data.py, verbs/loader.py)
NOT_HELD = ("it is not read from .npy files, and its values are written only while the daemon holds it (items "
            "of tensors, %d MB at most)" % (VALUES_MAX >> 20))
WORKERS = ("a loader with --num_workers, or one that reads a stream by pieces (data/piecesampler.py's order, not "
           "RandomSampler's), is not written yet")
QUERIED = ("a query's result is written as its values, and only while the daemon holds it (items of tensors, %d MB "
           "at most)" % (VALUES_MAX >> 20))

LOADER = '''class _Loader:
    """torchsh's data loader: DataLoader's batches, epoch after epoch; next() is None at an epoch's end."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, seed=None):
        from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler
        if seed is None:  # drawn from the global generator, as torchsh draws it
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
        self.generator = torch.Generator().manual_seed(seed)
        sampler = RandomSampler(dataset, generator=self.generator) if shuffle else SequentialSampler(dataset)
        self.loader = DataLoader(dataset, batch_sampler=BatchSampler(sampler, batch_size, drop_last),
                                 generator=self.generator)
        self.batches = None

    def restore(self, generator, position):
        """Where a checkpoint left it: the generator (as at its epoch's start, when mid-epoch), then that
        epoch's first `position` batches passed over, as torchsh's loader skips them."""
        self.generator.set_state(generator)
        self.batches = None
        for _ in range(position):
            self.next()

    def next(self):
        if self.batches is None:
            self.batches = iter(self.loader)
        batch = next(self.batches, None)
        if batch is None:
            self.batches = None
        return batch
'''
