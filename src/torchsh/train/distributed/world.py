"""RankWorld: what fit's loop (train/fit.py) does differently in a rank of `fit --nproc_per_node N`.

- the forward goes through DistributedDataParallel (gradients averaged over ranks in backward), or with
  --strategy fsdp through FSDP's fully_shard (parameters, gradients and optimizer state sharded);
- each optimizer step ends with one all_reduce that carries the stop flag (rank 0 reads the daemon's stop
  file; every rank stops at the same step) and the step's mean loss for --log;
- the epoch's loss and metric sums are summed over ranks, so the epoch row is the whole data's;
- rank 0 alone writes --log and the checkpoints: the same `fit` checkpoints as one process (model keys
  without DDP's `module.` prefix; with FSDP the full state gathered from the shards first, by every rank);
- each node's local rank 0 speaks to its node's daemon: progress events and the finished state (every
  rank holds the same trained state), so with several nodes every daemon's handles get the result.
"""
import contextlib
import dataclasses
import math
import os
import types

import torch
import torch.distributed as dist

from torchsh.recipes.base import state_dict_of
from torchsh.session import recipe
from torchsh.train import resume
from torchsh.train.distributed import handoff
from torchsh.train.distributed.shares import DistLoader, ValShare
from torchsh.train.metrics import epoch as fit_metrics
from torchsh.train.metrics.epoch import EpochSums


class RankWorld:
    def __init__(self, folder, strategy, device, start):
        self.folder, self.strategy, self.device, self.start = folder, strategy, device, start
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        self.writes = self.rank == 0                           # --log and its checkpoints
        self.speaks = int(os.environ.get("LOCAL_RANK", "0")) == 0  # this node's events and result
        self.net = None
        self.share = None  # this rank's DistLoader, once built
        self.recipes = None
        self.names = []   # the optimizer's parameters' names, in its order (FSDP's state is keyed by them)

    # -- the objects -------------------------------------------------------------------------------
    def build(self, spec, tensors):
        """model, optimizer, sched, loader, val from the spec: recipes built, values loaded, model wrapped."""
        self.recipes = spec["objects"]
        built = {}

        def make(name):
            if name in self.recipes:
                built[name] = recipe.build(self.recipes[name], built.__getitem__)
            return built.get(name)

        model = make("model")
        recipe.load_state(model, handoff.values(tensors, "model"))
        model.to(self.device)
        if self.strategy == "fsdp":
            from torch.distributed.fsdp import fully_shard
            fully_shard(model)
        optimizer, sched = make("optimizer"), make("sched")
        self.names = _parameter_names(model, optimizer)
        self._load_optimizer(model, optimizer, handoff.values(tensors, "optimizer"))
        if sched is not None:
            recipe.load_state(sched, handoff.values(tensors, "sched"))
        if self.strategy == "ddp":
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.net = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
        else:
            self.net = model
        built.update(loader=self._share(make("loader"), tensors, "loader"), val=self._share(make("val"), tensors, "val"))
        self.share = built["loader"]  # its `counted` says whether this rank's step had a batch of its own (agree)
        return built

    def _load_optimizer(self, model, optimizer, values):
        state = state_dict_of(values)
        if self.strategy == "fsdp":
            from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict
            set_optimizer_state_dict(model, optimizer, _by_name(state, self.names),
                                     options=StateDictOptions(full_state_dict=True))
        else:
            optimizer.load_state_dict(state)

    def _share(self, loader, tensors, name):
        """This rank's share of a loader built from its recipe (its dataset's values loaded)."""
        if loader is None:
            return None
        recipe.load_state(loader, handoff.values(tensors, name))
        if name == "val":
            return ValShare(loader.dataset, loader.batch_size, loader.num_workers, self.size, self.rank)
        return DistLoader(loader.dataset, loader.batch_size, loader.shuffle, loader.drop_last, loader.seed,
                          loader.num_workers, self.size, self.rank, epoch=self.start["loader_epoch"],
                          shuffle_buffer=getattr(loader, "shuffle_buffer", None))

    # -- fit's hooks (train/fit.py OneProcess says what each is for) ----------------------------------
    def wrap(self, model):
        return self.net

    def gradient_sync(self, closes_window):
        if closes_window:
            return contextlib.nullcontext()
        if self.strategy == "ddp":
            return self.net.no_sync()  # gradients accumulate locally; the closing backward averages them all
        return _fsdp_no_sync(self.net)

    def agree(self, stop, window_loss):
        """(stop, the step's loss: the mean over the ranks that counted a batch in it). A rank whose step was only
        an uncounted copy of its last batch (shares.py: a short share) has no loss (NaN) and is left out; a NaN
        from a counted batch stays NaN."""
        empty = math.isnan(window_loss) and not getattr(self.share, "counted", True)
        t = torch.tensor([1.0 if stop else 0.0, 0.0 if empty else window_loss, 0.0 if empty else 1.0],
                         dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return bool(t[0] > 0), t[1].item() / t[2].item() if t[2] else float("nan")

    def reduce(self, sums):
        return EpochSums(sums.names, self._summed(sums.state(), sums.names), sums.task)

    def _summed(self, state, names):
        """An EpochSums state summed over ranks (a rank without one adds zeros: every rank joins)."""
        state = state or {"samples": 0, "loss": 0.0, "correct": {n: fit_metrics.METRICS[n].empty for n in names}}
        sizes = torch.tensor(fit_metrics.total_sizes(names, state["correct"]), dtype=torch.int64, device=self.device)
        dist.all_reduce(sizes, op=dist.ReduceOp.MAX)  # a rank that saw no batch holds empty list totals
        sizes = sizes.tolist()
        t = torch.tensor([state["samples"], state["loss"]] + fit_metrics.flat_totals(names, state["correct"], sizes),
                         dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        values = t.tolist()
        return {"samples": int(values[0]), "loss": values[1],
                "correct": fit_metrics.totals_from_flat(names, values[2:], sizes)}

    def val_batches(self, share):
        for batch, counted in share.batches():
            if counted or self.strategy == "fsdp":  # FSDP's forward gathers: every rank runs as many
                yield batch, counted

    def restore(self, plan, scaler, progress_type):
        fit = self.start.get("resumed")
        if not fit:
            return progress_type(), None
        resume.loaders_and_scaler(fit, plan, scaler, "resume with the --nproc_per_node it was saved with")
        progress = progress_type(**fit["progress"])
        if self.rank != 0:
            progress.sums = None  # the checkpoint's partial sums are all ranks' already: counted once, on rank 0
        return progress, self.start.get("resumed_from")

    def save(self, path, plan, scaler, progress):
        """A `fit` checkpoint at PATH, written by rank 0 (every rank calls: the sums and FSDP's state are
        gathered from all of them)."""
        self._save(path, plan, scaler, progress, self.writes)

    def _save(self, path, plan, scaler, progress, mine):
        saved = dataclasses.replace(progress, sums=self._summed(progress.sums, plan.metrics)
                                    if progress.in_epoch else None)
        view = self._full_state(plan, mine)
        if mine:
            resume.save(path, view, scaler, saved)

    def _full_state(self, plan, mine):
        """What resume.save reads: the plan itself with DDP; with FSDP an unsharded copy where it is written."""
        if self.strategy != "fsdp":
            return plan
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                             get_optimizer_state_dict)
        options = StateDictOptions(full_state_dict=True)  # every rank gets it: each node's local rank 0 may write
        weights = get_model_state_dict(plan.model, options=options)
        optim = get_optimizer_state_dict(plan.model, plan.optimizer, options=options)
        if not mine:
            return None
        model = recipe.build(self.recipes["model"], {}.__getitem__)
        optimizer = recipe.build(self.recipes["optimizer"], {"model": model}.__getitem__)
        model.load_state_dict(weights)
        optimizer.load_state_dict(_by_index(optim, self.names))
        return types.SimpleNamespace(model=model, optimizer=optimizer, sched=plan.sched, loader=plan.loader,
                                     val=plan.val)

    def finish(self, plan, scaler, progress, result):
        """The finished state back to the daemon: result.safetensors (a fit checkpoint) and result.json."""
        self._save(handoff.path(self.folder, "result.safetensors"), plan, scaler, progress, self.speaks)
        if self.speaks:
            handoff.write_json(handoff.path(self.folder, "result.json"),
                                 {"rows": result.rows, "epoch": result.epoch, "step": result.step,
                                  "reason": result.reason, "loader_epoch": plan.loader.epoch})


@contextlib.contextmanager
def _fsdp_no_sync(module):
    """FSDP2's no_sync: reduce-scatter skipped, unsharded gradients kept until the window's last backward."""
    module.set_requires_gradient_sync(False)
    try:
        yield
    finally:
        module.set_requires_gradient_sync(True)


def _parameter_names(model, optimizer):
    names = {id(p): n for n, p in model.named_parameters()}
    return [names.get(id(p)) for g in optimizer.param_groups for p in g["params"]]


def _by_name(state, names):
    """An optimizer state_dict keyed by parameter index -> keyed by parameter name (FSDP's full form)."""
    return {"state": {names[i]: s for i, s in state["state"].items()},
            "param_groups": [dict(g, params=[names[i] for i in g["params"]]) for g in state["param_groups"]]}


def _by_index(state, names):
    index = {n: i for i, n in enumerate(names)}
    return {"state": {index[n]: s for n, s in state["state"].items()},
            "param_groups": [dict(g, params=[index[n] for n in g["params"]]) for g in state["param_groups"]]}
