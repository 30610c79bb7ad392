"""The loop of `torch fit`, PyTorch's recipe step for step (the weights equal this loop written in Python,
with the same loader seed, bit for bit on CPU):

    for epoch in range(epochs):
        model.train()
        for i, (x, y) in enumerate(loader):            # the Loader: reshuffled every epoch
            y = y.to(target_dtype)                      # only with --target_dtype
            y = y.view(len(y), *shape)                  # only where the target is viewed as the output (loss/check.py)
            if i % K == 0: optimizer.zero_grad()
            with torch.autocast(device_type, dtype):    # only with --autocast
                loss = loss_fn(model(x), y, **loss_args)
            scaler.scale(loss / K).backward()           # K = --accum (no division when 1); no scaler but fp16
            if (i + 1) % K == 0 or i + 1 == len(loader):
                scaler.unscale_(optimizer); clip_grad_norm_(params, clip)   # only with --clip
                scaler.step(optimizer); scaler.update()                     # = optimizer.step() without fp16
        model.eval(); with torch.no_grad(): …val loader…; model.train()    # only with --val
        scheduler.step()                                # ReduceLROnPlateau: scheduler.step(val_loss or loss)

run_fit(ctx, plan, report, should_stop) reports progress events to report(event) — {"event": "batch",
"epoch", "batch", "batches", "loss" (the epoch's running mean), "rate" (batches/s), "eta_s"} after every
batch, {"event": "epoch", **row} after every epoch, {"event": "note", "text"} for an early stop and a
resumed run with nothing to do (its follower's stderr gets it), {"event": "stopped"|"done", "epoch", "step",
"reason"} at the end — and polls should_stop() after every optimizer step: a stop there (or
--max_steps) ends the run resumably, the model keeping that step.

The same loop runs in every rank of `fit --nproc_per_node N` (train/distributed/rank.py): `world` is what
differs between one process and a rank (who writes logs and checkpoints, the model the forward goes through,
the sums and the stop decision all ranks must share); OneProcess is a plain `fit`'s. keep: a sweep's pruner.
"""
import contextlib
import os
import time

import torch

from torchsh.errors import TorchshError
from torchsh.train import resume
from torchsh.train.metrics.epoch import EpochSums
from torchsh.train.plan import AUTOCAST, on_device
from torchsh.train.record import Progress, RunRecord, ended
from torchsh.train.steps import steps_for


class OneProcess:
    """The world of a one-process fit: this process reads, trains, logs and checkpoints everything."""
    writes = True  # logs, progress events and checkpoints come from this process

    def wrap(self, model):
        """The module the training forward goes through (a rank's: DistributedDataParallel or FSDP)."""
        return model

    def gradient_sync(self, closes_window):
        """Around one micro-batch's forward and backward: ranks exchange gradients only in the one that
        closes an accumulation window (DDP's no_sync; one process has nothing to exchange)."""
        return contextlib.nullcontext()

    def agree(self, stop, window_loss):
        """(stop, the step's mean loss) as every process sees them: a rank stops only when all do."""
        return stop, window_loss

    def reduce(self, sums):
        """An epoch's sums over every process's share of the data."""
        return sums

    def val_batches(self, loader):
        while (batch := loader.next_batch()) is not None:
            yield batch, True  # (batch, counted): a rank may run an uncounted batch to keep in step

    def restore(self, plan, scaler, progress_type):
        """(progress, the checkpoint resumed from or None)."""
        source = resume.source(plan)
        return (resume.restore(source, plan, scaler, progress_type) if source else progress_type()), source

    def save(self, path, plan, scaler, progress):
        resume.save(path, plan, scaler, progress)

    def finish(self, plan, scaler, progress, result):
        pass


def run_fit(ctx, plan, report, should_stop, world=None, keep=None):  # keep(row): a sweep's pruner (False: "pruned")
    return _Run(plan, report, should_stop, world or OneProcess(), keep).go()


class _Run:
    def __init__(self, plan, report, should_stop, world, keep=None):
        self.plan, self.report, self.should_stop, self.world, self.keep = plan, report, should_stop, world, keep
        self.net = world.wrap(plan.model)  # what the training forward and backward go through
        self.scaler = torch.amp.GradScaler(plan.device_type, enabled=plan.autocast == "fp16")
        self.steps = steps_for(plan, self.net, self.scaler)  # eager, or --compile's
        self.params = [p for g in plan.optimizer.param_groups for p in g["params"]]
        p = next(plan.model.parameters(), None)
        self.device = p.device if p is not None else torch.device("cpu")
        self.record = RunRecord(plan, report, self._save, world.writes)

    def go(self):
        plan = self.plan
        self.record.start(*self.world.restore(plan, self.scaler, Progress))
        with torch.enable_grad():
            reason = ended(plan, self.record.progress)
            if reason is not None:  # a resumed run that is over already
                self.report({"event": "note", "text": self._nothing_to_do(reason)})
            while reason is None:
                reason = self._epoch()
        return self.record.finish(reason, lambda: self.world.finish(plan, self.scaler, self.record.progress,
                                                                     self.record.result))

    def _nothing_to_do(self, reason):
        plan, p = self.plan, self.record.progress
        why = {"done": "--epochs %d" % plan.epochs, "max_steps": "--max_steps %s" % plan.max_steps,
               "early_stop": "it stopped early: --patience %s" % plan.patience}[reason]
        return "nothing to do: the run is already at epoch %d step %d (%s)" % (
            p.epoch - (0 if p.in_epoch else 1), p.step, why)

    def _save(self, path):
        self.world.save(path, self.plan, self.scaler, self.record.progress)

    def _autocast(self):
        dtype = AUTOCAST.get(self.plan.autocast)
        if dtype is None:  # even a disabled torch.autocast costs ~10 µs to build, every batch
            return contextlib.nullcontext()
        return torch.autocast(self.plan.device_type, dtype=dtype)

    def _epoch(self):
        """One epoch (the rest of a resumed one); why the run ends in it or at its end, or None."""
        plan, p = self.plan, self.record.progress
        self.net.train()
        if not p.in_epoch:
            p.in_epoch, p.sums, p.epoch_seconds = True, None, 0.0
        sums = EpochSums(plan.metrics, p.sums, plan.task)
        resumed_at, batches, window, taken = p.epoch_seconds, len(plan.loader), 0, 0
        start = time.monotonic() - resumed_at
        while True:
            if window == 0:
                plan.optimizer.zero_grad()
            batch = self._next_batch(window == 0, sums, time.monotonic() - start)
            if batch is None:
                break
            position = plan.loader.position
            closes = window + 1 == plan.accum or position == batches
            with self.world.gradient_sync(closes):
                self._forward_backward(batch, sums, getattr(plan.loader, "counted", True))
            window, taken = window + 1, taken + 1
            if closes:
                window = 0
                reason = self._step(sums, time.monotonic() - start)
                if reason:
                    return reason
            elapsed = time.monotonic() - start
            rate = taken / max(elapsed - resumed_at, 1e-9) if taken else 0.0
            self.report({"event": "batch", "epoch": p.epoch, "batch": position, "batches": batches,
                         "loss": sums.row()["loss"], "rate": rate, "eta_s": (batches - position) / rate if rate else None})
        return self._end_epoch(sums, time.monotonic() - start)

    def _next_batch(self, at_step, sums, seconds):
        """The loader's next batch. A file it cannot read (file_error: a damaged row group, a vanished shard) first
        keeps what was trained: at an optimizer step's boundary the `last` checkpoint of the steps taken, so that
        --resume auto continues from this batch once the file is fixed. One process only: ranks save together."""
        try:
            return self.plan.loader.next_batch()
        except TorchshError as e:
            plan, p = self.plan, self.record.progress
            if e.code != "file_error" or not (at_step and plan.log and isinstance(self.world, OneProcess)):
                raise
            p.sums, p.epoch_seconds = sums.state(), seconds
            self._save(os.path.join(plan.log, "last.safetensors"))
            hint = "what was trained (step %d) is kept in %s/last.safetensors: fix the file, then run the same fit " \
                   "with --resume auto" % (p.step, plan.log)
            raise TorchshError(e.code, e.message, hint, e.op) from None

    def _forward_backward(self, batch, sums, counted=True):
        plan = self.plan
        *inputs, target = on_device(batch, self.device, plan.target_dtype, plan.target_shape)
        with self._autocast():
            output, loss = self.steps.forward_loss(inputs, target)
        if not counted:  # a rank a batch short keeps in step (shares.py): weight 0, as DDP's Join shadows it
            loss = loss * 0
        else:
            sums.add(loss.item(), output, target)
        self.scaler.scale(loss / plan.accum if plan.accum > 1 else loss).backward()

    def _step(self, sums, seconds):
        """The optimizer step closing an accumulation window; a stop reason when the run ends here."""
        plan = self.plan
        if plan.clip is not None:
            self.scaler.unscale_(plan.optimizer)  # a no-op without fp16
            torch.nn.utils.clip_grad_norm_(self.params, plan.clip)
        self.steps.optimizer_step()
        stop, window_loss = self.world.agree(self.should_stop(), sums.window_loss())
        return self.record.end_step(stop, window_loss, sums, seconds)

    def _end_epoch(self, sums, seconds):
        plan = self.plan
        row = self.record.epoch_row(self.world.reduce(sums).row(), self._validate() if plan.val is not None else None,
                                    seconds)
        if plan.sched is not None:
            if isinstance(plan.sched, torch.optim.lr_scheduler.ReduceLROnPlateau):
                plan.sched.step(row["val_loss" if plan.val is not None else "loss"])
            else:
                plan.sched.step()
        return self.record.end_epoch(row, self.keep)

    def _validate(self):
        plan, sums = self.plan, EpochSums(self.plan.metrics, task=self.plan.task)
        plan.model.eval()  # not through a DDP wrapper: ranks evaluate unequal shares, with no collective
        with torch.no_grad(), self._autocast():
            for batch, counted in self.world.val_batches(plan.val):
                *inputs, target = on_device(batch, self.device, plan.target_dtype, plan.target_shape)
                if plan.val_encode is not None:  # raw rows, preprocessed as the model was trained
                    inputs = plan.val_encode(inputs)
                output = plan.model(*inputs)
                loss = plan.loss(output, target, **plan.loss_args)
                if counted:
                    sums.add(loss.item(), output, target)
        plan.model.train()
        return self.world.reduce(sums).row("val_")
