"""Comparing `torch fit --log DIR` runs: `torch runs ls DIR` (a table of the runs at or under DIR, with the
hyperparameters that differ between them), `torch runs diff A B` (what differs between two runs, one line
each; exit 1 when something does, as diff(1)) and `torch runs best DIR --by KEY [--max]` (the best run's
folder, for `$(…)`). The folders are read by train/logs/runs.py. Lock-free: a listing never waits behind a
training step. docs/experiments.md is the user's view.
"""
import builtins
import json as json_module
import os

from torchsh.errors import TorchshError
from torchsh.results import Text
from torchsh.text import suggest
from torchsh.train.logs import runs as run_folders, writers
from torchsh.verbs import verb

_MODEL_WIDTH = 40  # a model's repr in the text table (JSON has it whole)
# two short runs with different learning rates, for the examples
_TWO_RUNS = ("X=$(torch randn 64 2); Y=$(torch randn 64 1); "
             "for lr in 0.1 0.01; do m=$(torch nn linear 2 1); torch fit $m $(torch optim sgd $m --lr $lr) "
             "$(torch data loader $(torch data tensors $X $Y) --batch_size 16) --epochs 2 --log runs/lr$lr >/dev/null; done; ")


def _read_all(ctx, folder):
    writing = writers.writing_logs()
    return [run_folders.read(name, path, writing) for name, path in run_folders.find(folder, _shown(ctx, folder))]


@verb("runs.ls(DirPath dir) -> Json", category="files", lockfree=True,
      examples=(_TWO_RUNS + "torch runs ls runs",), read_only=True)
def runs_ls(ctx, dir):
    """The runs of `torch fit --log` at or under DIR, as a table: NAME STATUS EPOCHS BEST, the hyperparameters
    that differ between them, SECONDS COMMAND. --json: rows.

    Args:
        dir: a run folder, or a folder of runs (searched below: runs/sweep/version_3)

    STATUS is running (a process writes its metrics.jsonl), finished (its last epoch, --max_steps or an
    early stop), stopped (ended at a checkpoint: --resume auto continues it), pruned (a `torch sweep` trial its
    pruner stopped) or failed. BEST is the best
    value of the run's --monitor (val_loss, else loss) over its epochs; max_epochs is fit's --epochs.
    """
    found = _read_all(ctx, dir)
    params = [run_folders.hyperparameters(r.record) for r in found]
    differing = _differing(params, set().union(*(run_folders.optimizer_keys(r.record) for r in found)))
    rows = []
    for run, hp in zip(found, params):
        best = run.best(run.monitor)
        rows.append({"name": run.name, "status": run.status, "epochs": run.epochs_done(),
                     "best": best, "monitor": run.monitor, **{k: hp.get(k) for k in differing},
                     "seconds": round(run.seconds(), 3), "command": run.record.get("command", "")})
    return RunRows(rows, differing)


class RunRows(list):
    """`runs ls`'s rows: JSON under --json, through the API and in nu; an aligned table with a header here."""

    def __init__(self, rows, differing):
        super().__init__(rows)
        self.differing = differing

    def text(self):
        head = ["NAME", "STATUS", "EPOCHS", "BEST"] + [k.upper() for k in self.differing] + ["SECONDS", "COMMAND"]
        cells = [head] + [[r["name"], r["status"], str(r["epochs"]),
                           "-" if r["best"] is None else "%.6g %s" % (r["best"], r["monitor"])]
                          + [_cell(k, r.get(k)) for k in self.differing] + ["%.1f" % r["seconds"], r["command"]]
                          for r in self]
        widths = [max(len(row[i]) for row in cells) for i in range(len(head) - 1)]
        return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] + "\n" for row in cells)


def _differing(params, optional):
    """The keys whose values differ between runs; one that only some runs have counts when it is not an
    optimizer's own (fit's --clip given to one run; not Adam's betas beside SGD, whose lr tells them apart)."""
    differing = []
    for key in _keys(params):
        values = {_text(p[key]) for p in params if key in p}
        if len(values) > 1 or (key not in optional and any(key not in p for p in params)):
            differing.append(key)
    return differing


def _keys(params):
    keys = []
    for p in params:
        keys += [k for k in p if k not in keys]
    return keys


def _text(value):
    return value if isinstance(value, str) else json_module.dumps(value, sort_keys=True, default=str)


def _cell(key, value):
    text = "-" if value is None else _text(value)
    return text[:_MODEL_WIDTH - 1] + "…" if key == "model" and len(text) > _MODEL_WIDTH else text


@verb("runs.diff(DirPath a, DirPath b) -> Json", category="files", lockfree=True,
      examples=(_TWO_RUNS + "torch runs diff runs/lr0.1 runs/lr0.01 || echo differ",), read_only=True)
def runs_diff(ctx, a, b):
    """What differs between runs A and B, one line each: `KEY: A's -> B's`, KEY a hyperparameter, the
    command (but its --log), a version or seed of run.json, the status, or a metric's final (final.KEY) or
    best (best.KEY) value. Exit status 1 when they differ, 0 when not, as diff(1); --json: rows {key, a, b}
    (null where a run lacks the key), a table in nu (empty when the runs agree).
    """
    one, two = (_facts(_one_run(ctx, folder)) for folder in (a, b))
    return DiffRows({"key": k, "a": one.get(k), "b": two.get(k)} for k in _keys([one, two])
                    if _text(one.get(k)) != _text(two.get(k)))


class DiffRows(list):
    """`runs diff`'s rows: `KEY: A -> B` lines here, exit status 1 when there is one (cli/run.py)."""

    @property
    def exit_status(self):
        return 1 if self else 0

    def text(self):
        return "".join("%s: %s -> %s\n" % (r["key"], _cell(r["key"], r["a"]), _cell(r["key"], r["b"])) for r in self)


def _one_run(ctx, folder):
    shown = _shown(ctx, folder)
    if not any(os.path.exists(os.path.join(folder, m)) for m in run_folders.MARKERS):
        raise TorchshError("no_runs", "%s is not a run (no run.json or metrics.jsonl)" % shown,
                           "`torch runs ls %s` lists the runs under it" % shown)
    return run_folders.read(os.path.basename(folder), folder, writers.writing_logs())


def _facts(run):
    """Everything diff compares: hyperparameters, command, versions, seeds, status, final and best metrics."""
    record = run.record
    options = run_folders.command_options(record.get("command", ""))
    command = str(record.get("command", "")).replace(" --log %s" % options.get("log"), "")  # the run's own name
    facts = dict(run_folders.hyperparameters(record), command=command or None, status=run.status)
    facts.update({"versions." + k: v for k, v in run_folders.part(record, "versions").items()})
    facts.update({"seeds." + k: v for k, v in run_folders.part(record, "seeds").items() if k != "loader"})  # = seed
    last = run.epochs[-1] if run.epochs else {}
    facts.update({"final." + k: v for k, v in last.items() if k not in ("kind", "seconds")
                  and run_folders.number(v) is not None})
    facts.update({"best." + k: run.best(k) for k in last if k not in ("kind", "epoch", "step", "lr", "seconds")
                  and run_folders.number(last[k]) is not None})
    return {k: v for k, v in facts.items() if v is not None}


@verb("runs.best(DirPath dir, *, str? by=None, bool max=False) -> str", category="files", lockfree=True,
      examples=(_TWO_RUNS + "torch runs best runs --by loss",), read_only=True)
def runs_best(ctx, dir, by=None, max=False):
    """The folder of the best run at or under DIR: the lowest --by over each run's epochs (--max: the highest).

    Args:
        by: the metric of the epoch rows compared (default val_loss when a run has it, else loss)
        max: the highest value is best (accuracy, f1, r2); lowest is the default, as Lightning's mode="min"

    The folder prints as a path from the caller's folder (DIR/NAME), so `torch checkpoint load
    $(torch runs best runs --by val_loss)/best.safetensors MODEL` composes. Runs without the metric are left out; ties go to the first in `runs ls` order.
    """
    found = _read_all(ctx, dir)
    seen = sorted({k for r in found for row in r.epochs for k, v in row.items()
                   if run_folders.number(v) is not None} - {"epoch", "step", "seconds", "lr"})
    by = by or ("val_loss" if "val_loss" in seen else "loss")
    scored = [(value, run) for run in found if (value := run.best(by, maximize=max)) is not None]
    if not scored:
        near = suggest.close(by, seen, cutoff=0.5)
        raise TorchshError("unknown_metric", "--by %s: no run under %s has it" % (by[:60], _shown(ctx, dir)),
                           ("did you mean %s? " % " or ".join(near) if near else "")
                           + "the epoch rows have: %s" % (", ".join(seen) or "no metrics"))
    value, run = (builtins.max if max else min)(scored, key=lambda pair: pair[0])  # the first of a tie
    return Text(_shown(ctx, dir if run.name == "." else os.path.join(dir, run.name)) + "\n")


def _shown(ctx, path):
    """A path as short as the caller can use it: relative to their cwd when it is under it."""
    cwd = getattr(ctx, "cwd", None) or "/"
    inside = os.path.commonpath([cwd, path]) == cwd
    return os.path.relpath(path, cwd) if inside else path  # "." for the cwd itself
