"""No orphans: a process torchd starts (a loader's workers, `fit --nproc_per_node`'s launcher and ranks) ends
within a second of the daemon's end, however it ended (kill -9 included). Their parent is often not the daemon
(a forkserver, elastic's launcher), so no parent-death signal can tell them: a watcher thread asks.
"""
import os
import threading
import time


def alive(pid):
    """True while process PID runs (a pid now another user's is not ours: gone)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def end_with(pid, end, parent=None):
    """Call END() within a second of process PID's end, or, given PARENT (this process's parent's pid when it
    started), of this process's parent's end."""
    def watch():
        while alive(pid) and (parent is None or os.getppid() == parent):
            time.sleep(1.0)
        end()
    threading.Thread(target=watch, name="daemon-watch", daemon=True).start()
