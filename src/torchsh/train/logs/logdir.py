"""`torch fit --log DIR`: metrics.jsonl and metrics.csv (a row per optimizer step and per epoch), run.json
(the command, versions and seeds: enough to repeat the run), and the checkpoints last.safetensors (every
epoch, every --save_every steps, and where a run stops) and best.safetensors (when the monitored value
improves).

metrics.jsonl has one JSON object a line: {"kind": "step"|"epoch", "epoch", "step", "loss", "lr",
"seconds", …}; epoch rows add val_loss and the metrics. metrics.csv holds the same rows under a header
that is the union of their keys in first-seen order (rewritten whole from metrics.jsonl when a new key
appears: rows are not kept in memory, so a run of a million steps costs no more than one of ten). A
resumed run first drops the rows logged after its checkpoint, so the files read as one run.

A warning the run's work raised (torchsh/warned.py: PyTorch's "Using a target size …", a model's own) is a
row {"kind": "warning", "epoch", "step", "category", "text"} before the row of the step that raised it, each
kind once a run; metrics.csv, a table of numbers, leaves it out; TensorBoard shows it as the text `warnings`.

The same rows go to TensorBoard's event files (train/logs/tfevents.py): each number of a row is a scalar tagged
step/NAME or epoch/NAME (loss, lr, val_loss, every metric) at the row's optimizer step; run.json is the text
`run.json`; the hyperparameters (the optimizer and its options, batch size, epochs, loss, model…) fill the
HParams tab. A resumed run writes a new file that opens with a SessionLog START at the step after its
checkpoint: TensorBoard then drops what the old file logged from there on, as metrics.jsonl drops its rows.
--log_format chooses among jsonl, csv and tb.
"""
import copy
import csv
import io
import json
import os
import platform
import time

import torch

from torchsh import __version__, fileio, warned
from torchsh.contract import card as cards
from torchsh.errors import TorchshError
from torchsh.train.compiled import steps as compiled
from torchsh.train.logs import tfevents
from torchsh.train.loss import functions as losses
from torchsh.train.plan import LOG_FORMATS

_NOT_SCALARS = ("kind", "epoch", "step", "seconds")  # the x axis, and the time a step took
# how a run ended -> the HParams tab's Status: finished runs succeed; a sweep's pruned trial failed its trial
_SESSION_STATUS = {"done": "success", "early_stop": "success", "max_steps": "success", "pruned": "failure"}


class LogDir:
    def __init__(self, folder, formats=LOG_FORMATS):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise fileio.file_error(folder, "create", e) from None
        self.folder = folder
        self.last = os.path.join(folder, "last.safetensors")
        self.best = os.path.join(folder, "best.safetensors")
        self.jsonl = os.path.join(folder, "metrics.jsonl")
        self.csv = os.path.join(folder, "metrics.csv")
        self.formats, self.columns, self._jsonl, self._events = formats, [], None, None
        self._pending = None  # a resumed run's start, written with its first row
        self._warnings = warned.Reader()  # the job's warnings, from now on (made on the work's thread)

    def start(self, plan, progress, resumed_from):
        """Write run.json; keep the rows up to the checkpoint resumed from (none for a new run). A resumed run's
        start waits for its first row: one with nothing left to do (over already, or stopped before its first
        step) leaves the folder as it was, its status too (a stopped run stays stopped, not finished)."""
        if resumed_from:
            self._pending = (plan, copy.copy(progress), resumed_from)  # progress goes on changing meanwhile
        else:
            self._start(plan, progress, resumed_from)

    def _start(self, plan, progress, resumed_from):
        rows = []
        if resumed_from:
            rows = [r for r in self._rows() if (r.get("kind") in ("step", "warning")
                                                and _number(r.get("step")) <= progress.step)
                    or (r.get("kind") == "epoch" and _number(r.get("epoch")) < progress.epoch)]
        for r in _numbers_rows(rows):
            self._add_columns(r)
        if "jsonl" in self.formats:
            fileio.atomic_write(self.jsonl, lambda tmp: _write_text(tmp, "".join(_line(r) for r in rows)))
            self._jsonl = open(self.jsonl, "a")
        if "csv" in self.formats:
            self._write_csv(_numbers_rows(rows))
        run = _run_record(plan)
        if "tb" in self.formats:
            self._start_events(plan, run, progress.step if resumed_from else None)
        path = os.path.join(self.folder, "run.json")
        if resumed_from and os.path.exists(path):
            with open(path) as f:
                first = json.load(f)
            first.pop("ended", None)  # going on again
            first.setdefault("resumed", []).append(dict(run, resumed_from=resumed_from, step=progress.step))
            run = first
        text = json.dumps(run, indent=1, default=str) + "\n"
        fileio.atomic_write(path, lambda tmp: _write_text(tmp, text))
        if self._events is not None:  # Markdown: indented, it shows as it is
            step = progress.step + 1 if resumed_from else 0
            self._events.write(tfevents.event(step, summary=tfevents.text("run.json", _indented(text))))

    def _start_events(self, plan, run, resumed_at):
        """A new events file; a new run's hyperparameters, or a resumed run's restart after its checkpoint."""
        first = not any(name.startswith(tfevents.FILE_PREFIX) for name in os.listdir(self.folder))
        try:
            self._events = tfevents.EventFile(self.folder)
        except OSError as e:
            raise fileio.file_error(self.folder, "write an events file in", e) from None
        if resumed_at is not None:  # TensorBoard drops the old files' steps from here: the run reads as one
            self._events.write(tfevents.event(resumed_at + 1, session_log=tfevents.session_start()))
        if first:
            self._events.write(tfevents.event(0, summary=tfevents.hparams(_hparams(plan, run), time.time())))

    def row(self, row):
        if self._pending is not None:
            self._start(*self._pending)
            self._pending = None
        self._log_warnings(row.get("epoch"), row.get("step"))
        if self._jsonl is not None:
            self._jsonl.write(_line(row))
            self._jsonl.flush()  # `torch plot` reads the file while the run goes on
        if "csv" in self.formats:
            self._csv_row(row)
        if self._events is not None:
            prefix = row["kind"] + "/"
            values = [(prefix + k, v) for k, v in row.items() if k not in _NOT_SCALARS
                      and isinstance(v, (int, float)) and not isinstance(v, bool)]  # not confusion's matrix
            self._events.write(tfevents.event(row["step"], summary=tfevents.scalars(values)))
            self._events.flush()  # TensorBoard shows the run while it goes on

    def _log_warnings(self, epoch, step):
        """The kinds of warning raised since the last row (torchsh/warned.py), each as a row of its own."""
        for category, text in self._warnings.new():
            if self._jsonl is not None:
                self._jsonl.write(_line({"kind": "warning", "epoch": epoch, "step": step, "category": category,
                                         "text": text}))
            if self._events is not None:
                self._events.write(tfevents.event(step or 0, summary=tfevents.text("warnings", "%s: %s" % (
                    category, text))))

    def _csv_row(self, row):
        if self._add_columns(row):  # rare: the first epoch row's val_loss and metrics
            rows = _numbers_rows(self._rows())
            self._write_csv(rows if self._jsonl is not None else rows + [row])
        else:
            with open(self.csv, "a", newline="") as f:
                csv.DictWriter(f, self.columns, lineterminator="\n").writerow(row)  # LF: a file for awk and cut

    def _rows(self):
        """The rows logged so far: metrics.jsonl's, or without it metrics.csv's (as text: written back as read)."""
        if "jsonl" in self.formats:
            return _read_rows(self.jsonl)
        try:
            with open(self.csv, newline="") as f:
                return list(csv.DictReader(f))
        except FileNotFoundError:
            return []
        except OSError as e:
            raise fileio.file_error(self.csv, "read", e) from None

    def close(self, ended=None):
        """ended: {"reason", "epoch", "step"}, kept in run.json as "ended" (`torch runs ls` reads the status)."""
        if self._pending is not None:  # resumed, and nothing logged: nothing ran, nothing changes
            self._pending = None
            return
        if ended is not None:
            self._note_end(ended)
        self._log_warnings((ended or {}).get("epoch"), (ended or {}).get("step"))  # those of the run's last step
        if self._jsonl is not None:
            self._jsonl.flush()
            os.fsync(self._jsonl.fileno())
            self._jsonl.close()
            self._jsonl = None
        if self._events is not None:
            status = _SESSION_STATUS.get((ended or {}).get("reason"))
            if status:  # a stopped run has no end yet: `--resume auto` goes on with it
                self._events.write(tfevents.event((ended or {}).get("step", 0), summary=tfevents.session_end(
                    status, time.time())))
            self._events.close()  # fsync'd too
            self._events = None

    def _note_end(self, ended):
        path = os.path.join(self.folder, "run.json")
        try:
            with open(path) as f:
                run = json.load(f)
        except (OSError, ValueError):
            return  # no run.json to add to (removed meanwhile): the status is read from the files then
        run["ended"] = dict(ended, time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        text = json.dumps(run, indent=1, default=str) + "\n"
        fileio.atomic_write(path, lambda tmp: _write_text(tmp, text))

    def _add_columns(self, row):
        new = [k for k in row if k not in self.columns]
        self.columns += new
        return bool(new)

    def _write_csv(self, rows):
        out = io.StringIO()
        writer = csv.DictWriter(out, self.columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        fileio.atomic_write(self.csv, lambda tmp: _write_text(tmp, out.getvalue() if self.columns else ""))


def _numbers_rows(rows):
    """The rows metrics.csv tabulates: a warning's text is no column of numbers."""
    return [r for r in rows if r.get("kind") != "warning"]


def _number(x):
    """A row's step or epoch: a number in metrics.jsonl, text in metrics.csv."""
    return float(x) if x not in (None, "") else 0


def _indented(text):
    return "".join("    " + line for line in text.splitlines(keepends=True))


def _hparams(plan, run):
    """The HParams tab's columns: what run.json says of the optimizer, data, loss and schedule (numbers,
    booleans and strings; a list as its JSON)."""
    values = {"optimizer": run["optimizer"]["type"]}
    values.update(run["optimizer"]["param_groups"][0] if run["optimizer"]["param_groups"] else {})
    values.update(batch_size=plan.loader.batch_size, epochs=plan.epochs, loss=plan.loss_name,
                  loss_args=losses.as_json(plan.loss_args) if plan.loss_args else None, seed=plan.loader.seed,
                  scheduler=run["scheduler"], accum=plan.accum, clip=plan.clip, autocast=plan.autocast,
                  patience=plan.patience, max_steps=plan.max_steps, monitor=plan.monitor, model=run["model"])
    values.update((plan.trial or {}).get("params", {}))  # a sweep's own names for what it varies
    return {k: v if isinstance(v, (bool, int, float, str)) else json.dumps(v, default=str)
            for k, v in values.items() if v is not None}


def _line(row):
    return json.dumps(row, allow_nan=True) + "\n"


def _write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def _read_rows(path):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise fileio.file_error(path, "read", e) from None
    rows = []
    for i, line in enumerate(lines):
        try:
            rows.append(json.loads(line))
        except ValueError:
            if i != len(lines) - 1:  # only a last line cut short by a crash is skipped
                raise TorchshError("file_error", "%s: a line is not JSON" % path) from None
    return rows


def _run_record(plan):
    """What repeats the run: the command (handles stand for objects made as described), versions, seeds."""
    loader = plan.loader
    return {
        "command": " ".join(plan.command),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": {"torchsh": __version__, "torch": torch.__version__, "python": platform.python_version()},
        "seeds": {"loader": loader.seed, "val_loader": plan.val.seed if plan.val else None,
                  "torch_initial_seed": torch.initial_seed()},
        "model": str(plan.model),
        "optimizer": {"type": type(plan.optimizer).__name__,
                      "param_groups": [{k: v for k, v in g.items() if k != "params"}
                                       for g in plan.optimizer.param_groups]},
        "scheduler": type(plan.sched).__name__ if plan.sched is not None else None,
        "loader": _loader_record(loader),
        "val": _loader_record(plan.val) if plan.val else None,
        cards.STORED_KEY: cards.of_model(plan.model) or None,  # the model's card (contract/card.py)
        **({"trial": plan.trial} if plan.trial else {}),  # a sweep's trial: study, number, params, seed
        **({"compile": compiled.RUN_RECORD} if plan.compile_cache else {}),  # --compile: not bit-exact, by how much
    }


def _loader_record(loader):
    return {"dataset": type(loader.dataset).__name__, "length": len(loader.dataset), "batch_size": loader.batch_size,
            "shuffle": loader.shuffle, "drop_last": loader.drop_last, "num_workers": loader.num_workers,
            "seed": loader.seed}
