"""One run's own record, the same in both loops that train (run_fit in train/fit.py, a sweep's stacked trials in
sweep/vectorized.py): where it is (Progress), its rows and end (FitResult), its log folder, and what is done at
the end of an optimizer step, of an epoch and of the run: the rows logged, the checkpoints saved, the progress
events reported, the best value and early stopping kept.
"""
import os
from dataclasses import dataclass, field

import torch

from torchsh.train.logs.logdir import LogDir


@dataclass
class Progress:
    """Where the run is: what a checkpoint stores besides the objects' own state."""
    epoch: int = 1             # the epoch in progress, or the next one (1-based)
    step: int = 0              # optimizer steps of the whole run
    in_epoch: bool = False
    sums: dict = None          # the epoch's EpochSums.state() so far
    epoch_seconds: float = 0.0
    best: float = None         # the best value of plan.monitor so far
    best_epoch: int = None     # the epoch it was reached in
    bad_epochs: int = 0        # epochs since it last improved


@dataclass
class FitResult:
    rows: list = field(default_factory=list)  # the epoch rows of this run
    epoch: int = 0
    step: int = 0
    reason: str = "done"                      # done | stopped | max_steps | early_stop | pruned


def ended(plan, p):
    """Why the run of PLAN at progress P is over before another epoch (a resumed run may be over already), or None."""
    if p.epoch > plan.epochs:
        return "done"
    if plan.patience is not None and p.bad_epochs >= plan.patience:
        return "early_stop"
    if plan.max_steps is not None and p.step >= plan.max_steps:
        return "max_steps"
    return None


def improved_by(plan, p, value):
    """Whether VALUE of plan.monitor is the best so far; P counts the epochs since the best."""
    better = p.best is None or (value < p.best if plan.lower_is_better() else value > p.best)
    if better:
        p.best, p.best_epoch, p.bad_epochs = value, p.epoch, 0
    else:
        p.bad_epochs += 1
    return better


def early_stop_note(plan, p):
    return "early stop after epoch %d: %s did not improve for %d epoch%s (best %.6g at epoch %s)" % (
        p.epoch - 1, plan.monitor, p.bad_epochs, "" if p.bad_epochs == 1 else "s", p.best, p.best_epoch)


class RunRecord:
    """PLAN's run as it goes: report(event) gets its progress events, save(path) writes its checkpoint at path
    (through the loop's own model and optimizer), and its log folder is written where writes is true."""

    def __init__(self, plan, report, save, writes=True):
        self.plan, self.report, self.save = plan, report, save
        self.progress, self.result = Progress(), FitResult()
        self.log = LogDir(plan.log, plan.log_format) if plan.log and writes else None

    def start(self, progress, source):
        """From PROGRESS (a resumed run's, read from checkpoint SOURCE; else a fresh one)."""
        self.progress = progress
        if self.log:
            self.log.start(self.plan, progress, source)

    def lr(self):
        lr = self.plan.optimizer.param_groups[0]["lr"]
        return lr.item() if isinstance(lr, torch.Tensor) else lr

    def end_step(self, stop, loss, sums, seconds):
        """After an optimizer step: its row (LOSS: the step's mean), the checkpoint every plan.save_every steps and
        at the end; the reason the run ends here (STOP: a stop was asked for), or None."""
        plan, p = self.plan, self.progress
        p.step += 1
        if self.log:
            self.log.row({"kind": "step", "epoch": p.epoch, "step": p.step, "loss": loss, "lr": self.lr(),
                          "seconds": seconds})
        reason = "stopped" if stop else None
        if plan.max_steps is not None and p.step >= plan.max_steps:
            reason = reason or "max_steps"
        if plan.log and (reason or p.step % plan.save_every == 0):
            p.sums, p.epoch_seconds = sums.state(), seconds
            self._save("last")
        return reason

    def epoch_row(self, values, val_values, seconds):
        """The epoch's row: its training VALUES (and VAL_VALUES, with --val), the learning rate, its seconds."""
        p = self.progress
        row = {"kind": "epoch", "epoch": p.epoch, "step": p.step, **values}
        if val_values is not None:
            row.update(val_values)
        if "tokens" in row and seconds:  # a language model's trained tokens (--metrics tokens) per second
            row["tokens_per_s"] = row["tokens"] / seconds
        row.update(lr=self.lr(), seconds=seconds)
        return row

    def end_epoch(self, row, keep=None):
        """The epoch of ROW has ended: the best value kept, the row logged and reported, the checkpoints saved
        (best.safetensors when it improved); why the run ends here, or None. KEEP(row) (a sweep's pruner) sees every
        row, the last one too, but a run at its end is done, not pruned."""
        plan, p = self.plan, self.progress
        improved = improved_by(plan, p, row[plan.monitor])
        p.epoch, p.in_epoch, p.sums, p.epoch_seconds = p.epoch + 1, False, None, 0.0
        if self.log:
            self.log.row(row)
        if plan.log:
            self._save("last")
            if improved:
                self._save("best")
        self.result.rows.append(row)
        self.report(dict(row, event="epoch"))
        reason = ended(plan, p)
        if reason == "early_stop":
            self.report({"event": "note", "text": early_stop_note(plan, p)})
        pruned = keep is not None and not keep(row)
        return reason or ("pruned" if pruned else None)

    def finish(self, reason, hand_back=None):
        """The run ends for REASON: its log closed, its result set, HAND_BACK() (what must be done before the end
        is reported: a rank writes its state back), the end reported; its FitResult."""
        p, result = self.progress, self.result
        epoch = p.epoch - (0 if p.in_epoch else 1)
        if self.log:
            self.log.close({"reason": reason, "epoch": epoch, "step": p.step})  # run.json's "ended"
        result.epoch, result.step, result.reason = epoch, p.step, reason
        if hand_back is not None:
            hand_back()
        self.report({"event": "done" if reason in ("done", "early_stop") else "stopped",
                     "epoch": epoch, "step": p.step, "reason": reason})
        return result

    def _save(self, name):
        self.save(os.path.join(self.plan.log, name + ".safetensors"))
