"""The daemon's one torch.profiler recording: torch.profiler is process-wide, so a second `torch profile` while
one records is refused (busy).

Threads. The profiler records the CPU events of the thread that started it, and every op runs on the one
tensor thread, so it starts and stops there: `torch profile` and `profile finish` are tensor work, a job's
step boundaries run there, and the ends that come from elsewhere (the caller's connection dropped, the time
cap's watcher) are queued as tensor work (Workers.run_task).

A recording ends, whichever comes first:
- `profile finish ID` (the caller's CMD ended): stopped, then written and dropped by the verb;
- its caller's exec connection drops (a killed client): stopped and dropped (daemon/conn.Conn.hold), at the
  next job step boundary or queued turn of the tensor thread;
- --max_s passes, or the daemon's memory grows by a quarter of the room its budget (TORCHSH_MAX_MEMORY) had
  when the recording began (the events pile up in memory, and reading the trace back for the table costs
  several times its size; an out-of-memory daemon would lose every object it holds): stopped with a note;
  what it recorded waits for the finish. A watcher thread looks twice a second and queues the stop as tensor
  work; every job step boundary reads its verdict too (a fit holds the tensor thread for its whole run, so the
  queued stop would wait behind it);
- --steps N: it starts at a job's first step boundary (that step warms up) and stops after N more steps.
A stopped recording nobody finished (an API caller that went away) is dropped when the next one begins.
"""
import logging
import secrets
import threading
import time
from dataclasses import dataclass

import torch
from torch.profiler import ProfilerActivity, profile

from torchsh import memory
from torchsh.errors import TorchshError

log = logging.getLogger("torchd")
WATCH_S = 0.5    # how often the watcher looks at the clock and the daemon's memory
_CURRENT = None  # set and cleared on the tensor thread only: begin, finish and the queued ends run there


@dataclass(frozen=True)
class Settings:
    out: str = None       # the folder for trace.json and stacks.folded (None: the table alone)
    top: int = 20
    sort: str = "self_cpu"
    format: str = "text"
    steps: int = None     # record this many job steps, after the first
    max_s: float = 600.0  # stop recording after this long
    max_growth: int = None  # stop recording once the daemon's RSS grew this many bytes (None: no cap)


class Recording:
    def __init__(self, settings):
        self.id, self.settings = "profile-" + secrets.token_hex(6), settings
        self.thread = threading.get_ident()  # the tensor thread: the only one that may start and stop it
        self.state, self.profiler, self.note = "armed", None, None
        self.dropped = False  # its caller went away: set from the connection's thread, acted on on the tensor thread
        self.capped = None    # why it must stop (time or memory): set by the watcher, acted on on the tensor thread
        self.deadline = time.monotonic() + settings.max_s
        self.start_rss = memory.rss_bytes()
        self.steps_left = settings.steps
        self.unwatched = threading.Event()  # set when it stops: the watcher ends

    def cap(self):
        """Why it must stop now (--max_s passed, or the memory cap), or None."""
        if time.monotonic() >= self.deadline:
            return "recording stopped after --max_s %g s; the files and table cover that much" % self.settings.max_s
        grown = memory.rss_bytes() - self.start_rss
        if self.settings.max_growth is not None and grown >= self.settings.max_growth:
            return ("recording stopped once the daemon's memory grew %s (a quarter of what its budget had left); the "
                    "files and table cover that much" % memory.human(grown))
        return None

    @property
    def cuda(self):
        return torch.cuda.is_available()

    def start(self):
        """Start recording; None, or why it could not (then it is stopped: nothing holds the profiler)."""
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        try:
            self.profiler = profile(activities=activities, record_shapes=True, profile_memory=True, with_stack=True)
            self.profiler.start()
        except (RuntimeError, ValueError, AssertionError) as e:  # kineto missing, a profiler already on…
            self.profiler = None
            self.stop("torch.profiler could not start: %s" % (str(e).strip().split("\n")[0] or type(e).__name__))
            return self.note
        self.state = "recording"
        return None

    def stop(self, note=None):
        """Stop recording (on the tensor thread); what it recorded stays for the finish."""
        if self.state == "recording":
            try:
                self.profiler.stop()
            except Exception:  # a profiler that cannot stop must not take the daemon's thread with it
                log.exception("stopping %s", self.id)
                self.profiler, note = None, "torch.profiler could not stop; the daemon log has why"
        self.state = "stopped"
        self.note = self.note or note
        self.unwatched.set()


def begin(settings, run_on_tensor_thread):
    """Start the recording (with --steps: arm it for the first step boundary); busy while another records."""
    global _CURRENT
    if _CURRENT is not None and _CURRENT.state != "stopped":
        raise TorchshError("busy", "another `torch profile` is recording (torch.profiler is one per process)",
                           "wait for its command to end; a profile ends with its command")
    _CURRENT = rec = Recording(settings)
    failed = rec.start() if settings.steps is None else None
    if failed:
        _CURRENT = None
        raise TorchshError("torch_error", failed, "nothing ran; the daemon log may say more")
    threading.Thread(target=_watch, args=(rec, run_on_tensor_thread), name="profile-watch", daemon=True).start()
    return rec


def _watch(rec, run_on_tensor_thread):
    """The watcher's thread: once the recording must stop (rec.cap), say why and queue the stop."""
    while not rec.unwatched.wait(WATCH_S):
        why = rec.cap()
        if why:
            rec.capped = why
            run_on_tensor_thread(lambda: expire(rec.id))
            return


def at_step():
    """A job's step boundary (jobs/job.py), on the tensor thread: --steps starts and counts here, and --max_s is
    checked. Costs one global read when no profile is on."""
    rec = _CURRENT
    if rec is None or rec.state == "stopped" or rec.thread != threading.get_ident():
        return
    if rec.dropped:  # a fit holds the tensor thread: the queued abandon would wait for its end
        abandon(rec.id)
    elif rec.capped or time.monotonic() >= rec.deadline:
        rec.stop(rec.capped or rec.cap())
    elif rec.state == "armed":
        rec.start()
    elif rec.steps_left is not None:
        rec.steps_left -= 1
        if rec.steps_left <= 0:
            rec.stop()


def expire(rec_id):
    """The watcher's stop, on the tensor thread: stop recording if this one still does."""
    rec = _CURRENT
    if rec is not None and rec.id == rec_id and rec.state != "stopped":
        rec.stop(rec.capped)
        log.info("%s: %s", rec_id, rec.capped)


def caller_gone(rec, run_on_tensor_thread):
    """Its caller's connection dropped (the connection's thread): drop it at the next step boundary or queued turn."""
    rec.dropped = True
    run_on_tensor_thread(lambda: abandon(rec.id))


def abandon(rec_id):
    """Its caller went away (on the tensor thread): stop and drop, unless it was finished already."""
    global _CURRENT
    rec = _CURRENT
    if rec is not None and rec.id == rec_id:
        rec.stop()
        _CURRENT = None
        log.info("dropped %s: its `torch profile` client went away", rec_id)


def finish(rec_id):
    """The stopped recording ID, no longer current (its caller writes it out)."""
    global _CURRENT
    rec = _CURRENT
    if rec is None or rec.id != str(rec_id).strip():
        raise TorchshError("bad_argument", "no profile %s in this daemon" % rec_id,
                           "a profile ends with its `torch profile` command; its id is for that command's use")
    if rec.thread != threading.get_ident():
        raise TorchshError("usage", "a profile is finished on the thread that started it")
    rec.stop()
    _CURRENT = None
    return rec

