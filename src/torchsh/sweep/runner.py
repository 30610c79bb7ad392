"""A `torch sweep` worker: the job's work. It asks the study for trials (Optuna's ask/tell), trains them
(several of one architecture together as one vectorised model, sweep/vectorized.py, else one at a time
with `fit`'s loop) and tells the study how each ended, until the study holds --trials of them.

Each trial's epoch rows feed the pruner: trial.report(monitored value, epoch), then trial.should_prune().
A trial the pruner stops is PRUNED (its run folder keeps its epochs and says "pruned"). A stop request
(`torch job stop`, Ctrl-C, the daemon stopping) ends the trial in progress at its next optimizer step: that
trial is told FAIL as interrupted and its values enqueued again, so `--resume` runs it first; trials
finished before are kept. A worker killed outright leaves its trial RUNNING in the study: `--resume` of the
same --log folder finds it by the worker's id (sweep.json) and does the same.
"""
import functools
import os
import time

import torch
from dataclasses import dataclass, field

from torchsh.errors import TorchshError, from_torch_exception
from torchsh.sweep import study as studies, trials as trial_runs
from torchsh.train.fit import run_fit
from torchsh.train.record import FitResult

FINISHED = ("COMPLETE", "PRUNED", "FAIL")
REPEATS = "repeats"            # a trial's user attribute: the number of the interrupted trial it runs again
WORKER = "worker"              # a trial's user attribute: the worker that ran it
STACK_BYTES = 1 << 30          # a vectorised stack's weights, gradients and optimizer state, at most


@dataclass
class Sweep:
    definition: dict             # what --resume and --join must share (study.DEFINITION_ATTR)
    space: dict                  # name -> an Optuna distribution
    data: object                 # the Loader every trial trains on
    val: object                  # the validation Loader, or None
    study: object                # optuna.Study
    log: str = None              # the folder of the trials' run folders
    target_dtype: object = None
    vectorize: int = 1           # trials asked for and trained together
    worker: str = ""
    starts: dict = field(default_factory=dict)  # the loaders' states when the sweep started
    notes: list = field(default_factory=list)   # lines for the caller's stderr before the first trial
    grid_done: bool = False                     # --sampler grid: every point tried

    @property
    def study_name(self):
        return self.study.study_name

    def reset_loaders(self):
        """Each trial starts where a fresh `torch fit` on these loaders would: their state at the sweep's start."""
        self.data.load_state_dict(self.starts["data"])
        if self.val is not None:
            self.val.load_state_dict(self.starts["val"])


def run(ctx, sweep, report, should_stop):
    """The job's work. It leaves no trace on the caller's objects: the loaders are put back as they were and
    the RNG too (each trial seeds its own model), so a script's later draws are what they would have been."""
    sweep.starts = {"data": sweep.data.state_dict(), "val": sweep.val.state_dict() if sweep.val else None}
    stopped = False
    cuda = range(torch.cuda.device_count()) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        try:
            while not stopped:
                count = _to_ask(sweep)
                if count <= 0:
                    break
                asked = [_ask(sweep) for _ in range(count)]
                stopped = _run_batch(ctx, sweep, asked, report, should_stop)
        finally:
            sweep.reset_loaders()  # the loaders as they were: a `fit` of the best values repeats its trial
    _say_best(sweep, report)


def _to_ask(sweep):
    """How many trials to ask for now: up to --vectorize (adapters: one), so that finished and running ones
    reach --trials."""
    counted, held = 0, sweep.study.get_trials(deepcopy=False)
    repeated = {t.user_attrs.get(REPEATS) for t in held}  # interrupted trials: their repeats count instead
    for t in held:
        if t.state.name in FINISHED and t.number not in repeated:
            counted += 1
        elif t.state.name == "RUNNING" and t.user_attrs.get(WORKER) != sweep.worker:
            counted += 1  # another worker's (--join): it will tell
    together = 1 if trial_runs.adapts_a_language_model(sweep.definition["model"]) else sweep.vectorize
    return 0 if sweep.grid_done else min(sweep.definition["trials"] - counted, together)


def _ask(sweep):
    trial = sweep.study.ask(sweep.space)
    trial.set_user_attr(WORKER, sweep.worker)
    return trial


def _run_batch(ctx, sweep, asked, report, should_stop):
    """Build the asked trials, train them (groups of one architecture together), tell each. True once stopped."""
    built = []
    for trial in asked:
        try:
            plan, notes = trial_runs.build(ctx, sweep, trial)
        except TorchshError as e:
            if e.code == "not_allowed":  # the caller's policy refused a command of --model's: no trial can run
                raise
            _failed(sweep, trial, e, report)
            continue
        for text in notes:
            report({"event": "note", "text": "trial %d: %s" % (trial.number, text)})
        built.append((trial, plan))
    stopped = False
    try:
        for group in _groups(built, sweep.vectorize):
            if stopped or should_stop():
                for trial, plan in group:
                    _interrupted(sweep, trial, report, None)
                stopped = True
                continue
            stopped = _train(ctx, sweep, group, report, should_stop)
    finally:
        for _, plan in built:  # an adapter trial's LoRA layers out of the base, however the trial ended
            trial_runs.remove_adapter(plan.model)
    return stopped


def _groups(built, vectorize):
    """Trials of one architecture together (when vectorising), in the order asked; a stack holds at most
    STACK_BYTES of weights, gradients and optimizer state (4 copies of the weights, as Adam's)."""
    if vectorize <= 1:
        return [[b] for b in built]
    groups = {}
    for trial, plan in built:
        groups.setdefault(trial_runs.architecture(plan.model), []).append((trial, plan))
    out = []
    for group in groups.values():
        weights = sum(p.numel() * p.element_size() for p in group[0][1].model.parameters())
        size = max(1, STACK_BYTES // max(1, 4 * weights))
        out += [group[i:i + size] for i in range(0, len(group), size)]
    return out


def _train(ctx, sweep, group, report, should_stop):
    plans = [plan for _, plan in group]
    refused = _together_refused(plans) if len(group) > 1 else "one trial"
    label = "trials " + _numbers([t.number for t, _ in group])
    if len(group) > 1:  # the caller sees how its trials train, and why not together
        report({"event": "note", "text": "%s train %s" % (label, "one at a time: %s" % refused if refused else
                                                           "together as one vectorised model")})
    started = time.monotonic()
    if not refused:
        from torchsh.sweep import vectorized
        sweep.reset_loaders()
        keep = [_keeper(trial, plan) for trial, plan in group]
        results = _guarded(lambda: vectorized.run_together(
            plans, functools.partial(_inner_report, report, group), should_stop,
            lambda i, row: keep[i](row)), len(group))
        seconds = (time.monotonic() - started) / len(group)
        for (trial, plan), result in zip(group, results):
            _tell(sweep, trial, plan, result, seconds, report)
        return any(r.reason == "stopped" for r in results)
    for trial, plan in group:
        sweep.reset_loaders()
        started = time.monotonic()
        [result] = _guarded(lambda: [run_fit(ctx, plan, functools.partial(_inner_report, report, [(trial, plan)], 0),
                                             should_stop, keep=_keeper(trial, plan))], 1)
        _tell(sweep, trial, plan, result, time.monotonic() - started, report)
        if result.reason == "stopped":
            return True
    return False


def _together_refused(plans):
    from torchsh.sweep import vectorized
    return vectorized.unsupported(plans)


def _guarded(train, count):
    """The results of train(), or `count` failed results carrying its error: a trial's failure is its own,
    the sweep goes on."""
    try:
        return train()
    except TorchshError as e:
        error = e
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError) as e:
        error = from_torch_exception(e)
    results = [FitResult(reason="failed") for _ in range(count)]
    for result in results:
        result.error = error
    return results


def _keeper(trial, plan):
    """keep(row) for fit's loop: report the monitored value at this epoch, then ask the pruner."""
    def keep(row):
        value = row.get(plan.monitor)
        if not isinstance(value, (int, float)) or value != value:
            return True  # nothing to judge by (a NaN loss): the trial's value will say so
        trial.report(float(value), step=int(row["epoch"]))
        return not trial.should_prune()
    return keep


def _inner_report(report, group, i, event):
    """A trial's fit events into the sweep's job: batches as its live progress, named by trial."""
    if event.get("event") in ("batch", "stopped"):  # progress; where a stop left it (the job's last line)
        numbers = [t.number for t, _ in group]
        report(dict(event, trial=numbers[i] if i is not None else _numbers(numbers)))


def _numbers(numbers):
    """Trial numbers as a caller reads them: 0..15 when they run on, else 0,3,5."""
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return "%d..%d" % (numbers[0], numbers[-1])
    return ",".join(map(str, numbers))


def _tell(sweep, trial, plan, result, seconds, report):
    o = studies.optuna()
    state = o.trial.TrialState
    if result.reason == "failed":
        return _failed(sweep, trial, getattr(result, "error", None), report, result)
    if result.reason == "stopped":
        return _interrupted(sweep, trial, report, result)
    value = trial_runs.value(plan, result)
    if result.reason == "pruned":
        _tell_study(sweep, trial, state=state.PRUNED)
        return _row(report, sweep, trial, "pruned", value, result, seconds)
    if value is None or value != value:
        _tell_study(sweep, trial, state=state.FAIL)
        report({"event": "note", "text": "trial %d: no %s to tell the study (NaN)" % (trial.number, plan.monitor)})
        return _row(report, sweep, trial, "failed", value, result, seconds)
    _tell_study(sweep, trial, value)
    return _row(report, sweep, trial, "complete", value, result, seconds)


def _tell_study(sweep, trial, value=None, state=None):
    """study.tell; GridSampler asks the study to stop once its grid is done (Study.stop, which Optuna refuses
    outside optimize() after the trial is stored): the sweep then asks for no more."""
    try:
        sweep.study.tell(trial, value, state=state)
    except RuntimeError as e:
        if "Study.stop" not in str(e):
            raise
        sweep.grid_done = True


def _failed(sweep, trial, error, report, result=None):
    o = studies.optuna()
    if error is not None:
        hint = "; %s" % error.hint if error.hint else ""
        report({"event": "note", "text": "trial %d failed: %s%s [%s]" % (trial.number, error.message, hint, error.code)})
    _tell_study(sweep, trial, state=o.trial.TrialState.FAIL)
    _row(report, sweep, trial, "failed", None, result, 0.0)


def _interrupted(sweep, trial, report, result):
    """Stopped before its end: FAIL, and its values queued again, so the next worker or --resume runs it."""
    o = studies.optuna()
    _tell_study(sweep, trial, state=o.trial.TrialState.FAIL)
    sweep.study.enqueue_trial(dict(trial.params), user_attrs={REPEATS: trial.number})
    _row(report, sweep, trial, "stopped", None, result, 0.0)


def _row(report, sweep, trial, state, value, result, seconds):
    monitor = sweep.definition["monitor"]
    report({"event": "row", "trial": trial.number, "state": state, monitor: value,
            "epochs": result.epoch if result is not None else 0, **trial.params, "seconds": round(seconds, 3)})


def _say_best(sweep, report):
    try:
        best = sweep.study.best_trial
    except ValueError:  # no trial completed
        return
    shown = " ".join("%s=%s" % (k, v) for k, v in best.params.items())
    where = trial_runs.folder(sweep.log, best.number)
    where = where if where and os.path.isdir(where) else None  # a joined study's best may be another worker's
    report({"event": "note", "text": "best: trial %d %s %.6g (%s)%s" % (
        best.number, sweep.definition["monitor"], best.value, shown, (" " + where) if where else "")})
