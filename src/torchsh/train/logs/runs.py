"""Reading `torch fit --log DIR` folders for `torch runs ls|diff|best` (verbs/runs.py): which folders are
runs, what each one's run.json says it was (its hyperparameters) and how far its metrics.jsonl got.

A folder is a run when it holds run.json or metrics.jsonl (train/logs/logdir.py writes both when a run starts).
Only what a listing needs is read: run.json, and metrics.jsonl's epoch rows: step rows, nearly all of the
file, are recognised by their first bytes and never parsed, except the last one (how far a run that stopped
mid-epoch got). Nothing here imports torch: a listing of a thousand runs costs milliseconds a run.

A run's status, from what its folder and the machine hold:
- running: a process holds its metrics.jsonl open for writing (train/logs/writers.py: a fit writes it for the
  whole run; seen in /proc, so on Linux, for the processes this user may look into);
- what run.json's "ended" says, where the run ended in its own time (fit writes it as it ends: done,
  early_stop and max_steps are finished, stopped is stopped, a sweep's pruned trial is pruned); else, for a
  run of an older torchsh or one whose daemon was killed:
- finished: its last epoch row is the run's last epoch (--epochs, 1 by default), or --max_steps was reached,
  or --patience epochs went by without the monitored value improving (an early stop);
- stopped: it ended before that with a checkpoint at its last step (`torch job stop`, Ctrl-C, `daemon
  stop`): last.safetensors is no older than metrics.jsonl, so `fit --resume auto` continues it;
- failed: it ended before that, with rows logged after its last checkpoint, or none at all (an error, a
  killed daemon).
"""
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field

from torchsh import fileio
from torchsh.errors import TorchshError

MARKERS = ("run.json", "metrics.jsonl")
MAX_DEPTH = 8                      # folders below DIR searched for runs (runs/sweep/s1/version_3 is 3)
MAX_RUN_JSON = 1 << 20             # run.json is a few KB; a bigger one is not read
CHUNK = 1 << 22                    # metrics.jsonl is read this many bytes at a time
LOWER_IS_BETTER = ("loss", "mae", "rmse")  # train/metrics/epoch.py's (a monitored value's mode; no torch import here)
_STEP_ROW = (b'{"kind": "step"', b'{"kind":"step"')
_ENDED = {"done": "finished", "early_stop": "finished", "max_steps": "finished", "stopped": "stopped", "pruned": "pruned"}


@dataclass
class Run:
    name: str                      # the folder relative to the DIR listed ("." for DIR itself)
    folder: str
    record: dict = field(default_factory=dict)   # run.json
    epochs: list = field(default_factory=list)   # the epoch rows, in order
    last_step: dict = None                       # the last step row
    status: str = "failed"

    @property
    def options(self):
        return command_options(self.record.get("command", ""))

    @property
    def monitor(self):
        return self.options.get("monitor") or ("val_loss" if any("val_loss" in r for r in self.epochs) else "loss")

    def best(self, key, maximize=None):
        """The best value of `key` over the epoch rows (None without one); min unless maximize (default: by name)."""
        values = [v for r in self.epochs if (v := number(r.get(key))) is not None]
        if not values:
            return None
        return max(values) if (maximize if maximize is not None else not lower_is_better(key)) else min(values)

    def epochs_done(self):
        return (number(self.epochs[-1].get("epoch")) or 0) if self.epochs else 0

    def seconds(self):
        done = sum(number(r.get("seconds")) or 0.0 for r in self.epochs)
        last_epoch = self.epochs_done()
        if self.last_step and (number(self.last_step.get("epoch")) or 0) > last_epoch:
            done += number(self.last_step.get("seconds")) or 0.0  # the epoch it stopped in, so far
        return done


def lower_is_better(key):
    return key.removeprefix("val_") in LOWER_IS_BETTER


def number(v):
    """A finite int or float, else None (bools, strings, "NaN")."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return v if math.isfinite(v) else None


def find(folder, shown):
    """(name, path) of every run at or under `folder`, names in natural order; no_runs when there is none.
    Symbolic links and hidden folders (--overwrite's .replaced-…) are not followed; a run's subfolders are
    not searched."""
    found = []
    _walk(folder, "", 0, found)
    if not found:
        raise TorchshError("no_runs", "%s holds no run (no run.json or metrics.jsonl at or under it)" % shown,
                           "`torch fit … --log DIR` writes a run there")
    return sorted(found, key=lambda pair: _natural(pair[0]))


def _walk(folder, name, depth, found):
    try:
        entries = list(os.scandir(folder))
    except OSError as e:
        if depth == 0:
            raise fileio.file_error(folder, "list", e) from None
        return  # a subfolder we may not read is not a run we can show
    names = {e.name for e in entries}
    if any(m in names for m in MARKERS):
        found.append((name or ".", folder))
        return
    if depth >= MAX_DEPTH:
        return
    for e in entries:
        if not e.name.startswith(".") and e.is_dir(follow_symlinks=False):
            _walk(e.path, os.path.join(name, e.name) if name else e.name, depth + 1, found)


def _natural(name):
    """version_2 before version_10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name) if part]


def read(name, folder, writing=frozenset()):
    """The Run in `folder`: its run.json, its epoch rows and last step row, and its status."""
    run = Run(name, folder, record=read_record(os.path.join(folder, "run.json")))
    jsonl = os.path.join(folder, "metrics.jsonl")
    run.epochs, run.last_step = _rows(jsonl)
    run.status = _status(run, jsonl, writing)
    return run


def _open_regular(path):
    """A binary file object for a regular file, else None: a FIFO or device planted as run.json or
    metrics.jsonl would block or never end (opened non-blocking, checked before reading)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def read_record(path):  # a run.json as a dict ({} when missing, damaged, too large or no regular file)
    f = _open_regular(path)
    if f is None:
        return {}  # a run that has not written it: listed without its hyperparameters
    try:
        with f:
            data = f.read(MAX_RUN_JSON + 1)
        record = json.loads(data) if len(data) <= MAX_RUN_JSON else {}
    except (OSError, ValueError):
        return {}  # a damaged one, likewise
    return record if isinstance(record, dict) else {}


def _rows(path):
    """(epoch rows, last step row) of a metrics.jsonl, read in chunks (memory stays bounded however long
    the run); a line cut short (a run writing it) is skipped."""
    f = _open_regular(path)
    if f is None:
        return [], None
    epochs, last_step, rest = [], None, b""
    with f:
        while chunk := f.read(CHUNK):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line.startswith(_STEP_ROW):
                    last_step = line  # parsed once, at the end: the last one
                elif line:
                    _add_row(line, epochs)
    if rest:
        last_step = rest if rest.startswith(_STEP_ROW) and _row(rest) else last_step
        if not rest.startswith(_STEP_ROW):
            _add_row(rest, epochs)
    return epochs, _row(last_step) if last_step else None


def _row(line):
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


def _add_row(line, epochs):
    row = _row(line)
    if row is not None and row.get("kind", "epoch") == "epoch":
        epochs.append(row)


def _status(run, jsonl, writing):
    if os.path.realpath(jsonl) in writing:
        return "running"
    ended = run.record.get("ended")
    if isinstance(ended, dict) and ended.get("reason") in _ENDED:
        return _ENDED[ended["reason"]]
    options, last = run.options, run.epochs[-1] if run.epochs else {}
    if (number(last.get("epoch")) or 0) >= _int(options.get("epochs", 1), 1):
        return "finished"
    max_steps, step = _int(options.get("max_steps"), None), number((run.last_step or last).get("step")) or 0
    if max_steps is not None and step >= max_steps:
        return "finished"
    patience = _int(options.get("patience"), None)
    if patience is not None and _bad_epochs(run) >= patience:
        return "finished"
    try:
        if os.stat(os.path.join(run.folder, "last.safetensors")).st_mtime_ns >= os.stat(jsonl).st_mtime_ns:
            return "stopped"
    except OSError:
        pass
    return "failed"


def _bad_epochs(run):
    """Epochs since the monitored value last improved (fit's early-stopping count)."""
    monitor, best, bad = run.monitor, None, 0
    for row in run.epochs:
        v = number(row.get(monitor))
        if v is None:
            continue
        if best is None or (v < best if lower_is_better(monitor) else v > best):
            best, bad = v, 0
        else:
            bad += 1
    return bad


def _int(text, default):
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


def part(record, key):
    """run.json's object under key ({} when it is missing or no object: a damaged file is listed, not fatal)."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def param_groups(record):
    groups = part(record, "optimizer").get("param_groups")
    return groups if isinstance(groups, list) else []


def command_options(command):
    """`torch fit MODEL OPT LOADER --epochs 3 --val VAL_LOADER --overwrite` -> {"epochs": 3, "val":
    "VAL_LOADER", "overwrite": True} (a value's words joined back: --loss_args '{"a": 1}')."""
    options, key = {}, None
    for word in str(command).split(" "):
        if word.startswith("--") and len(word) > 2:
            key = word[2:]
            options[key] = True
        elif key is not None:
            options[key] = word if options[key] is True else options[key] + " " + word
    return {k: _number_word(v) for k, v in options.items()}


def _number_word(value):
    """"3" -> 3, "0.5" -> 0.5: the options as numbers where they are (max_epochs sorts and compares as one)."""
    for kind in (int, float):
        try:
            return kind(value) if isinstance(value, str) else value
        except ValueError:
            pass
    return value


def optimizer_keys(record):
    """The param-group keys of run.json's optimizer: an SGD run has no betas, which is no difference."""
    groups = param_groups(record)
    return {k for g in groups if isinstance(g, dict) for k in g} | {"group%d.%s" % (i, k) for i, g in
                                                                     enumerate(groups) if isinstance(g, dict) for k in g}


def hyperparameters(record):
    """What a run was, from its run.json: fit's options (but --log, --resume), the optimizer and its first
    param group (others as groupN.KEY), the scheduler, the loader, the model, the seed: {name: value}."""
    hp = {k: v for k, v in command_options(record.get("command", "")).items() if k not in ("log", "resume")}
    if "epochs" in hp or record:
        hp["max_epochs"] = hp.pop("epochs", 1)  # EPOCHS is the epochs done; this, the epochs asked for
    optimizer = part(record, "optimizer")
    hp["optimizer"] = optimizer.get("type")
    for i, group in enumerate(param_groups(record)):
        for key, value in (group.items() if isinstance(group, dict) else ()):
            hp[key if i == 0 else "group%d.%s" % (i, key)] = value
    hp["scheduler"] = record.get("scheduler")
    loader = part(record, "loader")
    for key in ("batch_size", "shuffle", "drop_last"):
        hp[key] = loader.get(key)
    hp["train_size"] = loader.get("length")
    hp["seed"] = part(record, "seeds").get("loader")
    hp["model"] = " ".join(str(record.get("model", "")).split()) or None
    trial = record.get("trial")
    if isinstance(trial, dict) and isinstance(trial.get("params"), dict):  # a sweep's values, by its names
        hp.update(trial["params"])
    return {k: v for k, v in hp.items() if v is not None}
