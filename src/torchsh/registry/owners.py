"""Who owns a scope: the client process that waits for `torch scope -- CMD` and then ends it, known by pid
plus the process's start time (from /proc), so a recycled pid never keeps a dead client's scope alive. A
reaper thread ends the scopes whose owner is gone (SIGKILL, the OOM killer) once a second, and expires the
names given a TTL (registry/names.py). (A scope also
ends when its client's connection drops: daemon/conn.py; the pid covers a session restored in a new daemon.)
"""
import logging
import os
import threading
import time

from torchsh.errors import TorchshError

REAP_INTERVAL_S = 1.0   # how often the reaper looks for scopes whose client is gone
log = logging.getLogger("torchd")


def process_identity(pid):
    """(pid, start time) of a live process, or None if there is no such process (or only its zombie).

    The start time (clock ticks since boot, /proc/PID/stat field 22) tells a recycled pid apart. Where
    /proc is missing, kill(pid, 0) says whether the pid exists at all.
    """
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        return _exists(pid)
    fields = data[data.rindex(b")") + 2:].split()   # the command name may hold spaces and parentheses
    if fields[0] in (b"Z", b"X"):                      # exited, waiting to be reaped by its parent
        return None
    return (pid, int(fields[19]))                      # fields[0] is field 3 (state); starttime is field 22


def _exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return (pid, None)


def reap(registry, owned):
    """End the scopes of `owned` [(id, owner)] whose owner is gone; return {scope id: objects freed}."""
    gone = [sid for sid, owner in owned if process_identity(owner[0]) != owner]
    freed = {}
    for sid in gone:
        pid = dict(owned)[sid][0]
        try:
            freed[sid] = registry.end_scope(sid, "its client (pid %d) is gone" % pid)
        except TorchshError:
            continue  # ended meanwhile (its client's `scope end`, or a parent's reaping)
        log.info("ended scope %s: its client (pid %d) is gone; freed %d objects", sid, pid, freed[sid])
    return freed


class Reaper:
    """A thread that reaps the registry's orphaned scopes every REAP_INTERVAL_S, for the daemon's life."""

    def __init__(self, registry):
        self.registry = registry
        threading.Thread(target=self._forever, name="scope-reaper", daemon=True).start()

    def _forever(self):
        while True:
            time.sleep(REAP_INTERVAL_S)
            try:
                self.registry.reap_orphans()
                self.registry.expire_names()  # names given a TTL (registry/names.py)
            except Exception:  # never let the reaper die: the next round may succeed
                log.exception("scope reaper")
