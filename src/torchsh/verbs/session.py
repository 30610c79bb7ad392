"""Sessions that outlive a daemon and objects that move between daemons: `session save DIR`,
`session load DIR`, `session push --to CTX`, `cp H… --to CTX`.

A session is every object the daemon holds (tensors with requires_grad and .grad, models, optimizers with
their state, schedulers, datasets, loaders with their position, scopes) under its handle, as safetensors
+ JSON (session/snapshot.py); `session load` restores it in a fresh daemon under the same handles.
`cp` and `session push` only check here and answer with the copy reply (results.Copy): the client,
which alone reaches both daemons, streams the bundle from this daemon to the other (client/copyrelay.py).
"""
import re
import warnings

from torchsh.errors import TorchshError
from torchsh.history import persist as history
from torchsh.results import Copy, Text
from torchsh.session import snapshot, transfer
from torchsh.verbs import verb

_CONTEXT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@verb("session.save(OutDirPath dir) -> Json", category="objects",
      examples=("torch ones 2 >/dev/null && torch session save saved && ls saved",))
def save(ctx, dir):
    """Write every object held to DIR (created 0700 if missing) as DIR/session.safetensors: values,
    gradients, optimizer and loader state, recipes and handles; atomic and fsync'd, never pickled.

    What cannot be saved (a TorchScript module, a running job, what only they use) is named on stderr;
    the rest is saved.

    Args:
        dir: the session folder
    """
    manifest = transfer.save_folder(ctx.registry, dir)
    if getattr(ctx.app, "history", None) is not None:  # the requests that made them (`torch history`)
        history.save(ctx.app.history, dir)
    for s in manifest["skipped"]:
        warnings.warn("%s not saved: %s" % (s["handle"], s["reason"]))
    return Text("saved %d objects to %s\n" % (len(manifest["objects"]), dir))


@verb("session.load(DirPath dir) -> Json", category="objects",
      examples=("mkdir -m700 d && export TORCHSH_SOCKET=$PWD/d/s && x=$(torch ones 2) && torch session save saved "
                "&& torch daemon stop && torch session load saved && torch value $x && torch daemon stop",))
def load(ctx, dir):
    """Restore a saved session in this (fresh) daemon under the same handles; all or nothing.

    Tensors that carried an autograd graph come back detached, as leaves: the command says how many.

    Args:
        dir: a folder `torch session save` wrote
    """
    handles, manifest = transfer.hold(ctx.registry, transfer.read_folder(dir), True)
    if getattr(ctx.app, "history", None) is not None:
        history.load(ctx.app.history, dir)
    detached = snapshot.detached_count(manifest)
    tail = "; %d tensor%s came back detached from %s graph" % (detached, "" if detached == 1 else "s",
                                                               "its" if detached == 1 else "their") if detached else ""
    return Text("restored %d objects%s\n" % (len(handles), tail))


def _context(to):
    if not _CONTEXT_NAME.match(to or ""):
        raise TorchshError("bad_argument", "%r is not a context name" % to, "`torch context ls` lists them")
    return to


@verb("cp(Handle[] handles, *, str to, bool force=False) -> Json", category="objects", replies=("copy",),
      examples=("torch cp $(torch ones 2) $(torch nn linear 2 1) --to default",))
def cp(ctx, handles, to, force=False):
    """Copy tensors, models (with their state), optimizers (with their model) and schedulers to the daemon
    of context TO; prints the new handles there, one a line, in the order given. Bulk data streams as raw bytes.
    Their names (`@enc`) name the copies there (with their TTL; not the reflog).

    Args:
        handles: the objects to copy (an optimizer needs its model among them, a scheduler its optimizer)
        to: the destination context (`torch context ls`)
        force: a name that names another object there moves to the copy (that object stays reachable as
            @NAME~1); without it such a name is name_in_use and nothing is copied
    """
    _context(to)
    handles = [h.strip() for h in handles]
    for h in handles:
        ctx.registry.entry(h)
    skipped = snapshot.plan(ctx.registry, handles)[-1]   # what cannot go is refused now, before any bytes move
    if skipped:
        first = skipped[0]
        raise TorchshError("not_portable", "%s cannot be copied: %s" % (first["handle"], first["reason"]), first["hint"])
    return Copy(tuple(handles), to, keep=False, force=force)


@verb("session.push(*, str to, bool force=False) -> Json", category="objects", replies=("copy",),
      examples=("torch session push --to gpu1",))
def push(ctx, to, force=False):
    """Move this daemon's whole session to the daemon of context TO, under the same handles and names (as
    `session save` + `session load` there). Objects that cannot go are named; nothing here is freed.

    Args:
        to: the destination context (`torch context ls`); its daemon must not hold these handles
        force: a name that names another object there moves to the pushed one (as `torch cp --force`);
            without it such a name is name_in_use and nothing is pushed
    """
    _context(to)
    _, _, _, order, skipped = snapshot.plan(ctx.registry)
    for s in skipped:
        warnings.warn("%s not pushed: %s" % (s["handle"], s["reason"]))
    return Copy(tuple(order), to, keep=True, force=force)
