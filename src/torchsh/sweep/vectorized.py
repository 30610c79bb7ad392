"""Trials of one architecture trained together as one vectorised model (`torch sweep`, issue 26 §2).

Each trial is a FitPlan with its own freshly built model and optimizer; they share the data, the loss, the
metrics and the schedule of epochs. The trials' parameters are stacked ([T, …], torch.func.stack_module_state)
and one forward of the model (torch.func.functional_call under torch.vmap over the stack, the batch shared)
gives every trial's output; the backward of the sum of the trials' losses gives each trial exactly its own
gradient; the optimizer step is PyTorch's over the stack (sweep/vectorized_optim.py). Everything else is
run_fit's loop (train/fit.py) per trial: its rows, report events, log folder and checkpoints, written through
the trial's own model and optimizer (the stack row copied back into them, in PyTorch's own state format).

Each trial's result equals run_fit of that trial alone within 1e-6 on CPU (tests/unit/sweep/test_vectorized.py;
the largest difference seen there is 2.4e-7). The optimizer step is bit for bit PyTorch's single-tensor step on CPU
(a test pins it), and each loss is computed from the trial's own output as in a run alone; so a whole run (rows, weights,
optimizer state) is bit for bit the run alone's whenever the batched matrix products of the forward and backward
sum in the single run's order. That depends on the BLAS kernel chosen for the shapes: seen on x86 with PyTorch
2.13 for batches of 16 (every figure equal), not for a last batch of 8 (6e-8 off), so it is not promised.
A trial that keep() refuses, or that stops early (--patience), leaves the stack: the others go on without it.
"""
import copy
import functools
import time

import torch
from torch.func import functional_call, stack_module_state
from torch.utils.data import default_collate

from torchsh.sweep import vectorized_optim
from torchsh.train import resume
from torchsh.train.loss.functions import same_value
from torchsh.train.metrics.epoch import EpochSums
from torchsh.train.plan import on_device
from torchsh.train.record import RunRecord

SHARED = ("loader", "val", "loss", "loss_args", "metrics", "epochs", "monitor", "target_dtype", "patience",
          "max_steps", "save_every")
_RANDOM = (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU)  # draw random numbers in train mode


def unsupported(plans):
    """None when these FitPlans can train together; else a short reason (shown to the user)."""
    if not plans:
        return "no trials"
    first = plans[0]
    for name in SHARED:
        if any(not same_value(getattr(p, name), getattr(first, name)) for p in plans):
            return "the trials differ in %s" % name
    for plan in plans:
        why = _plan_reason(plan)
        if why:
            return why
    shapes = [[(n, type(m)) for n, m in p.model.named_modules()] +
              [(n, t.shape, t.dtype, t.device, t.requires_grad) for n, t in p.model.named_parameters()]
              for p in plans]
    if any(s != shapes[0] for s in shapes):
        return "the trials' models differ in shape"
    return vectorized_optim.reason([p.optimizer for p in plans]) or _forward_reason(plans)


def _plan_reason(plan):
    options = [("sched", "a learning-rate scheduler"), ("clip", "--clip"), ("autocast", "--autocast"),
               ("resume", "--resume")]
    for name, what in options:
        if getattr(plan, name) is not None:
            return "%s has no vectorised step" % what
    if plan.accum != 1:
        return "--accum has no vectorised step"
    model = plan.model
    random = [type(m).__name__ for m in model.modules() if isinstance(m, _RANDOM)]
    if random:
        return "%s draws random numbers" % random[0]
    if next(model.buffers(), None) is not None:
        return "the model has buffers (BatchNorm's running statistics), which the vectorised step does not update"
    params = [p for g in plan.optimizer.param_groups for p in g["params"]]
    if {id(p) for p in params} != {id(p) for p in model.parameters()} or len(params) != len(set(map(id, params))):
        return "the optimizer does not hold exactly the model's parameters"
    if any(p.dtype != torch.float32 for p in params):
        return "the model's parameters are not all float32"
    return None


def _vmapped(base, params, inputs):
    """Every trial's output: BASE's forward with each stack row of PARAMS, over the same inputs (a random op
    raises: torch.vmap's randomness="error")."""
    def one(row, *xs):
        return functional_call(base, row, xs)
    return torch.vmap(one, in_dims=(0,) + (None,) * len(inputs))(params, *inputs)


def _forward_reason(plans):
    """Why the vectorised forward of the data's first sample fails (a random op, an op vmap cannot batch), or None."""
    plan = plans[0]
    try:
        *inputs, _ = on_device(default_collate([plan.loader.dataset[0]]), plan.device_type, plan.target_dtype)
    except Exception:  # noqa: BLE001 (the data's own trouble shows in the run, as in a run alone)
        return None
    params, _ = stack_module_state([p.model for p in plans])
    try:
        with torch.no_grad():
            _vmapped(copy.deepcopy(plan.model).to("meta").train(), params, inputs)
    except RuntimeError as e:
        text = str(e).strip().split("\n")[0]
        return "the model's forward draws random numbers" if "random" in text else \
            "the model's forward does not vectorise (%s)" % text[:120]
    return None


def run_together(plans, report, should_stop, keep):
    """Train every plan's model as run_fit would; one FitResult a trial, each model and optimizer left in its
    final state. report(i, event) gets run_fit's events per trial (batch events with i=None); keep(i, row) after
    each epoch row says whether trial i goes on (asked after its last row too, when its answer changes nothing);
    should_stop() after every optimizer step stops them all."""
    return _Together(plans, report, should_stop, keep).go()


class _Trial(RunRecord):
    """One trial's side of the loop: run_fit's record (progress, result, rows, log folder) and its epoch's sums."""

    def __init__(self, index, plan, report, save):
        super().__init__(plan, functools.partial(report, index), save)
        self.index, self.sums = index, None
        self.start(self.progress, None)


class _Together:
    def __init__(self, plans, report, should_stop, keep):
        self.report, self.should_stop, self.keep = report, should_stop, keep
        self.trials = [_Trial(i, p, report, functools.partial(self._save, i)) for i, p in enumerate(plans)]
        self.stack = list(self.trials)  # the trials still training, in stack row order
        self.params, _ = stack_module_state([p.model for p in plans])
        self.base = copy.deepcopy(plans[0].model).to("meta")  # the architecture functional_call runs
        self.optim = vectorized_optim.stacked([p.optimizer for p in plans])
        self.plan = plans[0]  # for what they share
        self.scaler = torch.amp.GradScaler(self.plan.device_type, enabled=False)
        p = next(plans[0].model.parameters(), None)
        self.device = p.device if p is not None else torch.device("cpu")

    def go(self):
        with torch.enable_grad():
            while self.stack:
                self._epoch()
        return [t.result for t in self.trials]

    def _outputs(self, inputs):
        return _vmapped(self.base, self.params, inputs)

    def _losses(self, outputs, target):
        """Each trial's loss, from its own output: a loss of the whole stack under vmap costs as much here, and
        reduces in another order (1 ulp off the run alone's)."""
        plan = self.plan
        return torch.stack([plan.loss(out, target, **plan.loss_args) for out in outputs])

    def _epoch(self):
        plan = self.plan
        self.base.train()
        for t in self.stack:
            t.progress.in_epoch, t.progress.sums, t.progress.epoch_seconds = True, None, 0.0
            t.sums = EpochSums(plan.metrics, task=plan.task)
        batches, taken, start = len(plan.loader), 0, time.monotonic()
        while (batch := plan.loader.next_batch()) is not None:
            self._train_batch(batch)
            taken += 1
            if self._step(time.monotonic() - start):
                return
            rate = taken / max(time.monotonic() - start, 1e-9)
            losses = [t.sums.loss / t.sums.samples for t in self.stack]
            self.report(None, {"event": "batch", "epoch": self.stack[0].progress.epoch, "batch": plan.loader.position,
                               "batches": batches, "loss": min(losses), "trials": len(losses), "rate": rate,
                               "eta_s": (batches - plan.loader.position) / rate})
        self._end_epoch(time.monotonic() - start)

    def _train_batch(self, batch):
        *inputs, target = on_device(batch, self.device, self.plan.target_dtype, self.plan.target_shape)
        outputs = self._outputs(inputs)
        losses = self._losses(outputs, target)
        for t, value, out in zip(self.stack, losses.detach().tolist(), outputs.detach()):
            t.sums.add(value, out, target)
        trained = {n: p for n, p in self.params.items() if p.requires_grad}
        grads = torch.autograd.grad(losses.sum(), list(trained.values()), allow_unused=True)
        with torch.no_grad():
            self.optim.step(trained, {n: g for n, g in zip(trained, grads) if g is not None})

    def _step(self, seconds):
        """After an optimizer step: every trial's step row and checkpoint; True when the run ends here."""
        stop, ending = self.should_stop(), []
        for t in self.stack:
            reason = t.end_step(stop, t.sums.window_loss(), t.sums, seconds)
            if reason:
                ending.append((t, reason))
        self._leave(ending)
        return not self.stack

    def _save(self, index, path):
        """Trial INDEX's checkpoint at PATH, through its own model and optimizer."""
        trial = self.trials[index]
        self._write_back(self.stack.index(trial), trial)
        resume.save(path, trial.plan, self.scaler, trial.progress)

    def _write_back(self, row, trial):
        """Stack row ROW into the trial's own model and optimizer."""
        model = trial.plan.model
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(self.params[name][row])
        self.optim.write_state(row, trial.plan.optimizer, dict(model.named_parameters()))

    def _end_epoch(self, seconds):
        """run_fit's epoch end for every trial; those it ends leave the stack."""
        sums = self._validate() if self.plan.val is not None else None
        ending = []
        for row, t in enumerate(self.stack):
            values = t.epoch_row(t.sums.row(), sums[row].row("val_") if sums else None, seconds)
            reason = t.end_epoch(values, functools.partial(self.keep, t.index))
            if reason:
                ending.append((t, reason))
        self._leave(ending)

    def _validate(self):
        """Every trial's val EpochSums, from one vectorised pass over the val loader."""
        plan = self.plan
        sums = [EpochSums(plan.metrics, task=plan.task) for _ in self.stack]
        self.base.eval()
        with torch.no_grad():
            while (batch := plan.val.next_batch()) is not None:
                *inputs, target = on_device(batch, self.device, plan.target_dtype, plan.target_shape)
                if plan.val_encode is not None:
                    inputs = plan.val_encode(inputs)
                outputs = self._outputs(inputs)
                for s, value, out in zip(sums, self._losses(outputs, target).tolist(), outputs):
                    s.add(value, out, target)
        self.base.train()
        return sums

    def _leave(self, ending):
        """These (trial, reason) end: their model and optimizer get their state, their log closes, and the
        stack goes on without them."""
        if not ending:
            return
        leaving = {id(t) for t, _ in ending}
        for t, reason in ending:
            self._write_back(self.stack.index(t), t)
            t.finish(reason)
        rows = [row for row, t in enumerate(self.stack) if id(t) not in leaving]
        self.stack = [self.stack[r] for r in rows]
        if self.stack:
            index = torch.tensor(rows, dtype=torch.long, device=self.device)
            self.params = {n: p.detach().index_select(0, index).requires_grad_(p.requires_grad)
                           for n, p in self.params.items()}
            self.optim.keep_rows(rows)

