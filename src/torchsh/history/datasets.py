"""Datasets and loaders in the script: `data open` over .npy files, `data split`, `data loader` and
`data next` (the end of an epoch included), written as the PyTorch torchsh runs, so the batches are the same.

`data open x.npy y.npy` is a TensorDataset over the arrays, each read from its path after its sha256 check
(files.py): torchsh maps the files and copies rows out of the map, the same values. A loader is torchsh's
(data/loader.py) in a dozen lines, `_Loader`: PyTorch's DataLoader over one generator shared by its sampler,
its epochs one after another, next() None at an epoch's end, as `torch data next` exits 1 there. A form gives
None for what it cannot write yet (other formats or options, worker processes): forms.py refuses it by name.
"""
from torchsh.history import files, fitloop


def _open(e, r):
    read = e.made.get("files")
    options = {k: v for k, v in e.args.items() if k != "files" and v not in (None, False)}
    if not read or options or any(not f["path"].endswith(".npy") or files.sha256(f["path"]) != f["sha256"]
                                  for f in read):
        return None
    r.helpers.update(("_checked", "_numpy"))
    arrays = ", ".join("torch.from_numpy(numpy.load(_checked(%r, %r), allow_pickle=False))"
                       % (f["path"], f["sha256"]) for f in read)
    return [files.comment(f) for f in read] + ["%s = torch.utils.data.TensorDataset(%s)" % (r.outs(e), arrays)]


def _split(e, r):
    a = e.args
    lengths = [a[k] for k in ("length1", "length2", "length3", "length4", "length5") if a.get(k) is not None]
    if all(float(x).is_integer() for x in lengths) and sum(lengths) > 1:
        lengths = [int(x) for x in lengths]
    generator = "torch.Generator().manual_seed(%r)" % a["seed"] if a.get("seed") is not None else "torch.default_generator"
    return ["%s = torch.utils.data.random_split(%s, %s, generator=%s)"
            % (r.outs(e) + ("," if len(e.outputs) == 1 else ""), r.lit(a["dataset"]), r.lit(lengths), generator)]


def _loader(e, r):
    a = e.args
    if a.get("num_workers"):
        return None
    r.helpers.add("_Loader")
    options = "".join(", %s=%s" % (k, r.lit(a[k])) for k in ("batch_size", "shuffle", "drop_last", "seed") if k in a)
    return ["%s = _Loader(%s%s)" % (r.outs(e), r.lit(a["dataset"]), options)]


def _next(e, r):
    if e.exit:  # the epoch's end: the loader starts the next one at the call after
        return ["%s.next()  # the end of the epoch" % r.lit(e.args["loader"])]
    return ["%s = %s.next()" % (r.outs(e) + ("," if len(e.outputs) == 1 else ""), r.lit(e.args["loader"]))]


def _tensors(e, r):
    return ["%s = torch.utils.data.TensorDataset(%s)" % (r.outs(e), ", ".join(r.lit(t) for t in e.args["tensors"]))]


# why a form gave None: what forms.py's refusal says
UNWRITTEN = {"data.open": "only .npy files, with no options, unchanged since they were read, are written yet",
             "data.loader": "a loader with --num_workers is not written yet",
             "fit": fitloop.UNWRITTEN}
FORMS = {"data.open": _open, "data.tensors": _tensors, "data.split": _split, "data.loader": _loader,
         "data.next": _next, "fit": fitloop.form}

LOADER = '''class _Loader:
    """torchsh's data loader: DataLoader's batches, epoch after epoch; next() is None at an epoch's end."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, seed=None):
        from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler
        if seed is None:  # drawn from the global generator, as torchsh draws it
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
        generator = torch.Generator().manual_seed(seed)
        sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        self.loader = DataLoader(dataset, batch_sampler=BatchSampler(sampler, batch_size, drop_last),
                                 generator=generator)
        self.batches = None

    def next(self):
        if self.batches is None:
            self.batches = iter(self.loader)
        batch = next(self.batches, None)
        if batch is None:
            self.batches = None
        return batch
'''
