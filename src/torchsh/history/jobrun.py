"""A fit's job as its history entry sees it: the job's handle and how its work ended, for fitloop.py to write
the loop the daemon's model went through.

The entry is logged when `fit` returns, that is when its job starts (followed or --detach), so what the loop did
is known only once the job has ended (jobs/job.py, train/fit.py): done (every epoch, --max_steps, or --patience's
early stop: the loop as written), stopped (`job stop`, Ctrl-C's --interrupt, its follower gone: right after an
optimizer step, before that epoch's validation and scheduler step), stopped before it started (nothing ran),
failed, or still running. The end is kept here as the work returns, not looked up by handle when the script is
written: a followed fit's handle is freed with its last reply (jobs/follow.py). Only a weak reference to the job
is held (it holds the model and optimizer it trained), to tell a queued job from one stopped before it started.
"""
import re
import weakref

RUNNING, DONE, STOPPED, NEVER_STARTED, FAILED, UNKNOWN = _STATES = (
    "running", "done", "stopped", "never_started", "failed", "unknown")
_HANDLE = re.compile(r"job://[0-9a-z]+\Z")  # what a script's comment may name: a job's handle, nothing else


class JobRun:
    """One fit's job: wrap(work) before jobs.start, started(job) after it; end() says where it is now."""

    def __init__(self):
        self.handle = None
        self._job = lambda: None  # the job, while anything else holds it (a weakref.ref once started)
        self._end = None          # set by the work itself: {"state": RUNNING}, then how it returned or failed

    def wrap(self, work):
        """work(report, should_stop) that notes how it ends (run_fit's FitResult: its reason, epoch and step)."""
        def noting(report, should_stop):
            self._end = {"state": RUNNING}
            try:
                result = work(report, should_stop)
            except BaseException:
                self._end = {"state": FAILED}
                raise
            reason = getattr(result, "reason", None)
            self._end = {"state": UNKNOWN} if reason is None else {
                "state": STOPPED if reason == "stopped" else DONE, "reason": reason,
                "epoch": result.epoch, "step": result.step}
            return result
        return noting

    def started(self, job):
        self.handle = job.handle
        self._job = weakref.ref(job)

    def end(self):
        """{"handle", "state", and for a run that returned its "reason", "epoch", "step"}, as plain values."""
        end = self._end
        if end is None:  # its work has not begun: queued, or stopped (or left by its follower) before its turn
            job = self._job()
            end = {"state": RUNNING if job is not None and job.ended is None else NEVER_STARTED}
        return dict(end, handle=self.handle)

    def saved(self):
        """The end as a session file keeps it: a job still running there has an end nobody will know."""
        end = self.end()
        return dict(end, state=UNKNOWN) if end["state"] == RUNNING else end


def end_of(noted):
    """The end a fit entry noted (a JobRun in its daemon, its saved() dict from a session file), or None. A
    session file may hold anything: an end it does not spell as saved() does reads as unknown."""
    if isinstance(noted, JobRun):
        return noted.end()
    if not isinstance(noted, dict):
        return None
    handle, state = noted.get("handle"), noted.get("state")
    if not (isinstance(handle, str) and _HANDLE.match(handle) and state in _STATES):
        return {"state": UNKNOWN, "handle": None}
    if state in (DONE, STOPPED) and not all(type(noted.get(k)) is int for k in ("epoch", "step")):
        return {"state": UNKNOWN, "handle": handle}
    return {k: noted[k] for k in ("handle", "state", "reason", "epoch", "step") if k in noted}
