"""`torch fit --log DIR`: metrics.jsonl and metrics.csv (a row per optimizer step and per epoch), run.json
(the command, versions and seeds: enough to repeat the run), and the checkpoints last.safetensors (every
epoch, every --save_every steps, and where a run stops) and best.safetensors (when the monitored value
improves).

metrics.jsonl has one JSON object a line: {"kind": "step"|"epoch", "epoch", "step", "loss", "lr",
"seconds", …}; epoch rows add val_loss and the metrics. metrics.csv holds the same rows under a header
that is the union of their keys in first-seen order (rewritten whole from metrics.jsonl when a new key
appears: rows are not kept in memory, so a run of a million steps costs no more than one of ten). A
resumed run first drops the rows logged after its checkpoint, so the files read as one run.
"""
import csv
import io
import json
import os
import platform
import time

import torch

from torchsh import __version__, fileio
from torchsh.data import meaning
from torchsh.errors import TorchshError


class LogDir:
    def __init__(self, folder):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise fileio.file_error(folder, "create", e) from None
        self.folder = folder
        self.last = os.path.join(folder, "last.safetensors")
        self.best = os.path.join(folder, "best.safetensors")
        self.jsonl = os.path.join(folder, "metrics.jsonl")
        self.csv = os.path.join(folder, "metrics.csv")
        self.columns, self._jsonl = [], None

    def start(self, plan, progress, resumed_from):
        """Write run.json; keep the rows up to the checkpoint resumed from (none for a new run)."""
        rows = []
        if resumed_from:
            rows = [r for r in _read_rows(self.jsonl)
                    if (r.get("kind") == "step" and r.get("step", 0) <= progress.step)
                    or (r.get("kind") == "epoch" and r.get("epoch", 0) < progress.epoch)]
        for r in rows:
            self._add_columns(r)
        fileio.atomic_write(self.jsonl, lambda tmp: _write_text(tmp, "".join(_line(r) for r in rows)))
        self._write_csv(rows)
        self._jsonl = open(self.jsonl, "a")
        run = _run_record(plan)
        path = os.path.join(self.folder, "run.json")
        if resumed_from and os.path.exists(path):
            with open(path) as f:
                first = json.load(f)
            first.setdefault("resumed", []).append(dict(run, resumed_from=resumed_from, step=progress.step))
            run = first
        fileio.atomic_write(path, lambda tmp: _write_text(tmp, json.dumps(run, indent=1, default=str) + "\n"))

    def row(self, row):
        self._jsonl.write(_line(row))
        self._jsonl.flush()  # `torch plot` reads the file while the run goes on
        if self._add_columns(row):  # rare: the first epoch row's val_loss and metrics
            self._write_csv(_read_rows(self.jsonl))
        else:
            with open(self.csv, "a", newline="") as f:
                csv.DictWriter(f, self.columns, lineterminator="\n").writerow(row)  # LF: a file for awk and cut

    def close(self):
        if self._jsonl is not None:
            self._jsonl.flush()
            os.fsync(self._jsonl.fileno())
            self._jsonl.close()
            self._jsonl = None

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
        "data": meaning.of_model(plan.model) or None,  # classes, categories, standardization (data/meaning.py)
    }


def _loader_record(loader):
    return {"dataset": type(loader.dataset).__name__, "length": len(loader.dataset), "batch_size": loader.batch_size,
            "shuffle": loader.shuffle, "drop_last": loader.drop_last, "num_workers": loader.num_workers,
            "seed": loader.seed}
