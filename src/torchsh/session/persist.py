"""`TORCHSH_PERSIST=DIR` (or `torchd --persist DIR`): the daemon's session outlives the daemon.

At start, before the socket is bound (no command sees a half-loaded registry), the session in
DIR/session.safetensors is restored under its own handles; when the daemon stops, for any reason that
lets it finish (TTL expiry, `daemon stop`, SIGTERM, a restart), it writes its session there, atomically
and fsync'd, after the requests in flight are answered. A session that fails to load is moved aside
(session.safetensors.bad-TIME), never overwritten, and the daemon starts empty: the log says why.
"""
import logging
import os
import time

from torchsh.errors import TorchshError
from torchsh.history import persist as history
from torchsh.session import snapshot, transfer

log = logging.getLogger("torchd")


def load_at_start(app, where):
    path = os.path.join(where, transfer.SESSION_FILE)
    if not os.path.exists(path):
        log.info("persist: no session in %s yet", where)
        return 0
    t0 = time.perf_counter()
    try:
        with app.tensor_lock("persist load"):
            handles, manifest = transfer.hold(app.registry, transfer.read_folder(where), True)
    except TorchshError as e:
        aside = "%s.bad-%d" % (path, int(time.time()))
        os.replace(path, aside)
        log.error("persist: could not restore %s (%s); moved it to %s and started empty", path, e.message, aside)
        return 0
    log.info("persist: restored %d objects from %s in %.2fs (%d came back detached from their graph)",
             len(handles), path, time.perf_counter() - t0, snapshot.detached_count(manifest))
    _history(history.load, app, where)
    return len(handles)


def _history(step, app, where):
    """Load or save the history log (`torch history`) beside the session; the objects never wait on it."""
    if getattr(app, "history", None) is None:
        return
    try:
        step(app.history, where)
    except TorchshError as e:
        log.error("persist: the history in %s: %s", where, e.message)


def save_at_stop(app, where):
    t0 = time.perf_counter()
    try:
        manifest = transfer.save_folder(app.registry, where)
    except TorchshError as e:
        log.error("persist: could not save the session to %s: %s", where, e.message)
        return
    for s in manifest["skipped"]:
        log.warning("persist: %s not saved: %s", s["handle"], s["reason"])
    _history(history.save, app, where)
    log.info("persist: saved %d objects to %s in %.2fs", len(manifest["objects"]), where, time.perf_counter() - t0)
