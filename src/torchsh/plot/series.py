"""The series a chart draws, read from a metrics.jsonl that `torch fit --log DIR` writes.

One JSON object per line: {"kind": "step"|"epoch", "epoch", "step", "loss", "lr", "seconds", …}, epoch
rows with "val_loss" and one key per metric. `--x step` draws the step rows and `--x epoch` the epoch
rows; a key no row of that kind has (val_loss with --x step) is taken from the other kind's rows,
which carry both counters, so validation loss lands on the step that ended its epoch.
"""
import json
import math
import os
from dataclasses import dataclass

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument

X_KEYS = ("step", "epoch")


@dataclass
class Series:
    name: str
    points: list              # [(x, y)] in file order, finite values only


def metrics_path(source):
    """DIR means DIR/metrics.jsonl; a file is read as it is."""
    return os.path.join(source, "metrics.jsonl") if os.path.isdir(source) else source


def read_rows(path):
    """The JSON objects of a metrics.jsonl, blank lines skipped; a line that is no JSON object is named."""
    fileio.regular_file(path)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise fileio.file_error(path, "read", e) from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            if number == len(lines):
                continue  # an unterminated last line: a log still being written, cut mid-row
            raise TorchshError("file_error", "%s line %d is not JSON" % (path, number),
                               "a metrics.jsonl holds one JSON object per line") from None
        if isinstance(row, dict):
            rows.append(row)
    return rows


def choose(rows, ys=None, x=None):
    """(x key, [Series]) for the --y keys over the --x counter, with the defaults the help states."""
    if x is not None and x not in X_KEYS:
        raise bad_argument("--x %s: use step or epoch" % x[:40])
    if x is None:
        x = "step" if any(r.get("kind") == "step" for r in rows) or not any(r.get("kind") for r in rows) else "epoch"
    if not ys:
        ys = ["loss"] + (["val_loss"] if any("val_loss" in r for r in rows) else [])
    series = [Series(y, _points(rows, x, y)) for y in ys]
    empty = [s.name for s in series if not s.points]
    if len(empty) == len(series):
        keys = sorted({k for r in rows for k, v in r.items() if _number(v) is not None} - {"step", "epoch"})
        raise bad_argument("no rows have %s and %s" % (x, " or ".join(ys)),
                           "keys in this file: %s" % (", ".join(keys) or "none"))
    return x, [s for s in series if s.points]


def overlay(sources, ys=None, x=None):
    """(x key, [Series]) of several runs on one chart: each --y key of each run, named "RUN KEY" (RUN: the
    run's folder relative to the folder all of them are in); the first run chooses the defaults."""
    folders = [os.path.dirname(os.path.abspath(s)) if not os.path.isdir(s) else os.path.abspath(s) for s in sources]
    common = os.path.commonpath(folders)
    chosen = []
    for source, folder in zip(sources, folders):
        x, ys_of_run = choose(read_rows(metrics_path(source)), ys, x)
        ys = ys or [s.name for s in ys_of_run]
        label = os.path.relpath(folder, common) if folder != common else os.path.basename(folder)
        chosen += [Series("%s %s" % (label, s.name), s.points) for s in ys_of_run]
    return x, chosen


def _points(rows, x, y):
    kind = "step" if x == "step" else "epoch"
    own = [r for r in rows if r.get("kind", kind) == kind and y in r]
    chosen = own or [r for r in rows if y in r]
    points = []
    for r in chosen:
        px, py = _number(r.get(x)), _number(r.get(y))
        if px is not None and py is not None:
            points.append((px, py))
    return points


def _number(v):
    """A finite int or float (the strings "NaN"/"Infinity" and bools are not points)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None
