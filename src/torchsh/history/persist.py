"""The history log in a session folder: DIR/history.safetensors beside session.safetensors, its entries as
JSON metadata and their tensors (generator states, literal values) as the file's tensors; never pickled.

`session save` writes it (atomic, through stfile.write); `session load` puts its entries before the ones the
loading daemon logged itself, so `torch history --python` spans both daemons.

An entry the file cannot hold (a sparse, meta or quantized tensor literal, a value JSON cannot write) is
saved as unnoted, its op and outputs kept: a script refuses it by name, and the rest of the log is saved.
"""
import json
import logging
import os
import re

import torch

from torchsh.formats import stfile
from torchsh.history.jobrun import JobRun
from torchsh.history.log import Entry
from torchsh.quoting import python_name

HISTORY_FILE = "history.safetensors"
_logger = logging.getLogger("torchd")


def save(log, folder):
    tensors = {}
    rows = [_storable_entry(e, tensors) for e in log.entries()]
    stfile.write(os.path.join(folder, HISTORY_FILE), tensors, meta={"format": 1, "entries": rows})


def _storable_entry(e, tensors):
    """e as a JSON row, its tensors added to tensors; unnoted (op and outputs only) when it cannot be stored."""
    mine = _Keyed(len(tensors))
    try:
        row = _entry_json(e, mine)
        json.dumps(row, allow_nan=True)
    except Exception:
        _logger.exception("history: entry %d (%s) cannot be saved; it is saved as unnoted", e.seq, e.op)
        return {"op": e.op, "args": {"dict": {}}, "outputs": list(e.outputs), "exit": e.exit, "rng": None,
                "grad": e.grad, "at": e.at, "size": e.size, "writes": [], "made": {"dict": {"unnoted": True}}}
    tensors.update(mine)
    return row


class _Keyed(dict):
    """One entry's tensors, keyed after the start tensors already taken, each checked to be one the file holds."""

    def __init__(self, start):
        super().__init__()
        self.start = start

    def key(self):
        return "t%d" % (self.start + len(self))


def _file_form(t):
    """t as safetensors stores it: complex as view_as_real (it has no complex128); sparse, meta and quantized
    tensors have no such form."""
    t = t.detach()
    if t.layout != torch.strided or t.is_meta or t.is_quantized:
        raise ValueError("a %s %s tensor has no safetensors form" % (t.layout, t.dtype))
    t = t.cpu().resolve_conj().resolve_neg()
    return (torch.view_as_real(t) if t.is_complex() else t).contiguous()


def load(log, folder):
    """Restore the saved entries into log; nothing when the folder has none (a session saved before)."""
    path = os.path.join(folder, HISTORY_FILE)
    if not os.path.exists(path):
        return 0
    tensors, meta = stfile.read(path)
    rows = (meta or {}).get("entries", [])
    log.restore([_entry_of(r, tensors) for r in rows])
    return len(rows)


def _entry_json(e, tensors):
    return {"op": e.op, "args": _out(e.args, tensors), "outputs": list(e.outputs), "exit": e.exit,
            "rng": _out(e.rng, tensors) if e.rng is not None else None, "grad": e.grad, "at": e.at,
            "size": e.size, "writes": _out(list(e.writes), tensors), "made": _out(e.made, tensors)}


def _entry_of(r, tensors):
    """The entry a row holds; one torchsh never writes (an op that is no name, an output that is no handle,
    a grad mode of its own: a file from elsewhere) comes back unnoted, so a script refuses it, named safely."""
    outputs = list(r["outputs"]) if isinstance(r.get("outputs"), list) else []
    if not (_op_name(r.get("op")) and r.get("grad", "") in _GRAD_MODES
            and all(isinstance(h, str) and _HANDLE.match(h) for h in outputs)):
        return Entry(0, ascii(r.get("op"))[:100], {}, [h for h in outputs if isinstance(h, str) and _HANDLE.match(h)],
                     made={"unnoted": True})
    return Entry(0, r["op"], _in(r["args"], tensors), outputs, exit=r["exit"],
                 rng=_in(r["rng"], tensors) if r.get("rng") is not None else None, grad=r.get("grad", ""),
                 at=r.get("at", 0.0), size=r.get("size", 256), writes=tuple(_in(r.get("writes", []), tensors)),
                 made=_in(r.get("made", {"dict": {}}), tensors))


_HANDLE = re.compile(r"[a-z]+://[0-9a-z]+\Z")  # what a script's placeholders and variable names are made of
_GRAD_MODES = ("", "no_grad", "inference_mode")  # `with torch.MODE():` in the script


def _op_name(op):
    try:
        return bool(python_name(op, dotted=True))
    except ValueError:
        return False


def _out(v, tensors):
    """A logged value as JSON: tensors stored under a key, tuples and dicts tagged so they read back as such."""
    if isinstance(v, JobRun):  # a fit's job: its end as it is now
        return _out(v.saved(), tensors)
    if isinstance(v, torch.Tensor):
        key = tensors.key()
        tensors[key] = _file_form(v)
        return {"tensor": key, "complex": True} if v.is_complex() else {"tensor": key}
    if isinstance(v, tuple):
        return {"tuple": [_out(x, tensors) for x in v]}
    if isinstance(v, list):
        return [_out(x, tensors) for x in v]
    if isinstance(v, dict):
        return {"dict": {str(k): _out(x, tensors) for k, x in v.items()}}
    return v


def _in(v, tensors):
    if isinstance(v, list):
        return [_in(x, tensors) for x in v]
    if isinstance(v, dict):
        if "tensor" in v:
            t = tensors[v["tensor"]]
            return torch.view_as_complex(t) if v.get("complex") else t
        if "tuple" in v:
            return tuple(_in(x, tensors) for x in v["tuple"])
        return {k: _in(x, tensors) for k, x in v.get("dict", {}).items()}
    return v
