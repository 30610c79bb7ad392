"""`torch history`: the requests that changed the daemon's state (torchsh.history), as a table, as JSON, or as
a plain PyTorch script (`--python`, only what made one object with `--for HANDLE`). docs/history.md."""
import json
import os
import warnings

from torchsh.errors import TorchshError
from torchsh.formats import stfile
from torchsh.history import python
from torchsh.results import Table, Text
from torchsh.verbs import verb

COLUMNS = ("seq", "op", "args", "outputs", "exit", "random")


@verb("history(*, int? last=None, bool python=False, Handle? for=None, OutPath? sidecar=None) -> Json",
      category="objects",
      examples=("torch randn 2 3 >/dev/null; torch history --last 3",
                "x=$(torch randn 2 3); torch history --python --for $x > s.py && python s.py --check"), read_only=True)
def history(ctx, last=None, sidecar=None, **flags):
    """The requests that changed the daemon's state, oldest first: SEQ OP ARGS OUTPUTS EXIT RANDOM (--json: rows
    with the bound arguments, handles as ids). Reading ops (value, shape, tensors, help) are not logged.

    Args:
        last: only the newest N
        python: write the session as a plain PyTorch script (`import torch`; `python s.py --check` compares
            each object's sha256 with the daemon's)
        for: with --python: only the requests that made this object (a backward slice; in-place verbs such as
            step, zero_grad, backward and train_step count as writes to their targets)
        sidecar: with --python: the .safetensors file for tensors too large to write as literals (the script
            reads it from its own folder); without it they go to history-SHA256.safetensors in your folder
    """
    log = getattr(ctx.app, "history", None)
    entries = log.entries() if log is not None else []
    target = flags.get("for")
    if flags.get("python"):
        return _script(ctx, entries, target, sidecar)
    if target is not None:
        raise TorchshError("usage", "--for needs --python", "torch history --python --for %s > s.py" % target)
    if last is not None:
        entries = entries[-last:] if last > 0 else []
    return HistoryRows([e.row() for e in entries], COLUMNS)


class HistoryRows(Table):
    """Rows (JSON under --json, a table in nu) that print as aligned columns, arguments as name=value."""

    def text(self):
        return Table([dict(r, args=_args_text(r["args"]), outputs=" ".join(r["outputs"]) or "-",
                           random="yes" if r["random"] else "") for r in self], self.columns).text()


def _args_text(args):
    return " ".join("%s=%s" % (k, json.dumps(v, separators=(",", ":")) if not isinstance(v, str) else v)
                    for k, v in args.items())


def _script(ctx, entries, target, sidecar):
    text, tensors = python.script(entries, ctx.registry, target, os.path.basename(sidecar) if sidecar else None,
                                  ctx.table)
    if tensors:
        sidecar = sidecar or _default_sidecar(ctx, tensors)
        if sidecar is not None:
            stfile.write(sidecar, tensors)
    return Text(text)


def _default_sidecar(ctx, tensors):
    """Where tensors too large for literals go without --sidecar: python.sidecar_name_of(tensors) in the caller's
    folder (stdout has no file name; the script is most often redirected there), said on stderr. The name is
    the tensors' sha256, so a file already there under it is this same sidecar (None: nothing to write), and
    one holding other tensors is refused rather than written over."""
    name = python.sidecar_name_of(tensors)
    path = ctx.path(name, "out")
    if ctx.context_name == "default" and os.path.lexists(path):
        if _holds(path, tensors):
            warnings.warn("the script reads %d tensor(s) from %s (already there), beside it" % (len(tensors), name))
            return None
        raise TorchshError("file_error", "%s exists and holds other tensors; the script's %d large tensor(s) need "
                           "a sidecar" % (path, len(tensors)), "give --sidecar FILE.safetensors (beside the script)")
    warnings.warn("%d tensor(s) too large for literals written to %s: keep it beside the script "
                  "(--sidecar FILE names it)" % (len(tensors), name))
    return path


def _holds(path, tensors):
    """Whether the safetensors file at path holds exactly these tensors (bit for bit)."""
    try:
        found, _ = stfile.read(path)
    except TorchshError:  # not a safetensors file: something else of the caller's
        return False
    return found.keys() == tensors.keys() and all(found[k].dtype == t.dtype and found[k].shape == t.shape
                                                  and found[k].equal(t) for k, t in tensors.items())
