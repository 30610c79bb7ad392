"""A job: long work (`torch fit`) that runs on its own thread in the daemon, to watch, leave and stop.

The work is a plain function work(report, should_stop) (train/fit.run_fit's shape): it calls
report(event) with progress events and polls should_stop() at every step boundary. The runner holds
the tensor lock while the work runs and lets it go at each step boundary when a request waits for
it (should_stop), so other commands run between steps, in their turn (the lock is FIFO).

What a job says is kept as a list of events, appended to and never rewritten: ("row", dict) an epoch
row for stdout, ("plain", text) a plain progress line (every PLAIN_EVERY_S, and at the end of each
epoch's batches) for followers whose stderr is not a terminal, ("note", text) a line every follower's
stderr gets (the loss and log folder chosen, queued behind another job, an early stop, each kind of warning
the work raised: torchsh/warned.py), ("err", text) a final line (stopped at…, the failure). The newest batch
event is kept aside (`progress`) for a terminal's live line.
Followers read by offset into the event list (jobs/render.py), so any number can follow one job.

A foreground job is leased to its follower (docs/jobs.md): each of its polls renews the lease for LEASE_S;
a follower gone that long (Ctrl-C in nu, a killed client, a closed API connection) stops the job at its next
step boundary, as `job stop` does, and its last line and the daemon's log say why. A queued job whose lease ran
out (or that was stopped) while it waited for its turn never starts: nothing of its work runs.
"""
import logging
import threading
import time

from torchsh import protocol, warned
from torchsh.errors import TorchshError, from_torch_exception
from torchsh.jobs.text import clock, progress_text  # noqa: F401 (clock: verbs/jobs.py)
from torchsh.jobs.steplock import Beside, StepLock

log = logging.getLogger("torchd")
PLAIN_EVERY_S = 30.0
EXIT_STOPPED = 130  # what a shell reports for a Ctrl-C'd command: a stopped job ends the same way
# A leased job's follower polls at least once a second (follow.MAX_WAIT_S) while it lives; one silent for
# this long has gone (a loaded machine may delay a poll a while: a few seconds of slack)
LEASE_S = 5.0


class Job:
    def __init__(self, verb, columns=None, uses=()):
        self.verb = verb            # "fit": the verb that runs, for lines and the census
        self.uses = tuple(u for u in uses if u is not None)  # what the work trains: not freed while it runs
        self.handle = None          # job://…, once registered
        self.state = "running"
        self.exit = None            # the exit status once ended: 0 done, 130 stopped, an error's status
        self.events = []
        self.progress = None        # the newest batch event
        self.first_row = None       # the first epoch row: text output prints the header above it
        self.columns = columns      # the row keys shown, in order (None: the first row's keys)
        self.position = None        # (epoch, step) of the last completed step the work reported
        self.trial = None           # a sweep's trial in progress
        self.tokens = None          # a generation's tokens so far (its "text" events)
        self.downloads = []         # (stage id, path): what a remote caller fetches once it ends (fit --log)
        self.started, self.ended = time.time(), None
        self.changed, self._stop = threading.Condition(), threading.Event()
        self.stop_reason = None     # why it was asked to stop, when not by `job stop` or Ctrl-C
        self.stopped_early = False  # the work ended at a stop request, not at its end
        self.error = None           # the TorchshError it failed with
        self.lease_until = None     # a foreground job: its follower's lease runs out then (time.monotonic)
        self.orphaned = False       # a foreground job whose follower left: nobody will read its end
        self.beside = False         # it runs beside the other jobs, not on the tensor thread (start's beside)
        self.among = None           # the daemon's RunningJobs (jobs/running.py) it counts in until it ends
        self._last_plain = time.monotonic()

    # -- the work's side ----------------------------------------------------------------------
    def report(self, event):
        kind = event.get("event")
        with self.changed:
            had = len(self.events)
            if kind == "batch":
                self.progress = dict(event)
                self._note_position(event)
                now = time.monotonic()
                if now - self._last_plain >= PLAIN_EVERY_S or (event.get("batch") == event.get("batches")
                                                               and "trial" not in event):  # a sweep: by the clock
                    self._last_plain = now
                    self.events.append(("plain", progress_text(event) + "\n"))
            elif kind in ("epoch", "row"):  # an epoch row of fit, a trial row of sweep
                self._note_position(event)
                self.columns = self.columns or [k for k in event if k not in ("event", "kind")]
                row = {k: event[k] for k in self.columns if k in event}
                if self.first_row is None:
                    self.first_row = row
                self.events.append(("row", row))
            elif kind == "text":  # a piece of text for stdout as it comes (`lm generate`'s tokens)
                self.tokens = (self.tokens or 0) + (event.get("token") is not None)
                self.events.append(("text", {"token": event.get("token"), "text": event["text"]}))
            elif kind == "end":  # the work's one closing row (`lm generate`'s --json summary)
                self.events.append(("end", {k: v for k, v in event.items() if k != "event"}))
            elif kind == "note":  # what the work says once: `torch: fit: early stop at …`
                self.events.append(("note", "torch: %s: %s\n" % (self.verb, event["text"])))
            elif kind in ("stopped", "done"):  # where the work ended (a stop request is known by should_stop)
                self._note_position(event)
            if len(self.events) > had:  # followers wait for events; the live line is redrawn on a clock
                self.changed.notify_all()

    def say_warning(self, line):
        """A new kind of warning its work raised (torchsh/warned.py): a note, naming a sweep's trial."""
        trial = "trial %d: " % self.trial if self.trial is not None else ""
        self.report({"event": "note", "text": "%swarning: %s" % (trial, line)})

    def _note_position(self, event):
        if "epoch" in event and "step" in event:
            self.position = (event["epoch"], event["step"])
        if isinstance(event.get("trial"), int):  # a sweep's: which trial the work is in
            self.trial = event["trial"]

    def should_stop(self):
        if self.lease_until is not None and not self._stop.is_set() and time.monotonic() > self.lease_until:
            self.leave("its follower went away (no poll for %gs)" % LEASE_S)
        if self._stop.is_set():
            self.stopped_early = True
            return True
        return False

    # -- the caller's side --------------------------------------------------------------------
    def request_stop(self, reason=None):
        """Stop at the next step boundary (the work's should_stop() answers True from now on). A reason
        (a follower gone, the daemon stopping) goes into its last line and the daemon's log."""
        if reason and not self._stop.is_set() and self.ended is None:
            self.stop_reason = reason
            log.info("stopping %s at its next step boundary: %s", self.handle, reason)
        self._stop.set()

    def lease(self):
        """A follower polled: the job is its for LEASE_S more."""
        self.lease_until = time.monotonic() + LEASE_S

    def leave(self, reason):
        """Its follower is gone: stop at the next step boundary, and once ended let nobody's handle go."""
        self.orphaned = True
        self.request_stop(reason)

    def running(self):
        return self.ended is None

    def finish(self, state, exit_status, line=None):
        with self.changed:
            if line:
                self.events.append(("err", line + "\n"))
            if self.among is not None:  # before anyone sees it ended: a `free` a follower sends next is let through
                self.among.discard(self)
            self.state, self.exit, self.ended = state, exit_status, time.time()
            self.changed.notify_all()

    def wait_for(self, offset, timeout):
        """Block until there are events past `offset`, the job ended, or `timeout` seconds passed."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while len(self.events) <= offset and self.ended is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.changed.wait(left)

    def wait_ended(self, timeout):
        """Block until the job has ended or `timeout` seconds passed."""
        with self.changed:
            self.changed.wait_for(lambda: self.ended is not None, timeout)

    def rows(self):
        """Its epoch rows so far, as dicts (the JSON face's result of a run followed to its end)."""
        with self.changed:
            return [payload for kind, payload in self.events if kind in ("row", "end")]

    def stopped_line(self):
        reason = ": %s" % self.stop_reason if self.stop_reason else ""
        if self.tokens is not None:  # a generation (`lm generate`, `lm say`): where it stopped is a token count
            return "stopped after %d tokens%s" % (self.tokens, reason)
        epoch, step = self.position or (0, 0)
        return "stopped at %sepoch %s step %s" % ("" if self.trial is None else "trial %s " % self.trial, epoch, step) + reason

    @property
    def verb_word(self):
        """The verb as one word (`lm.generate`, as `torch ops` names it), for a table's column: no space."""
        return self.verb.replace(" ", ".")

    def progress_text(self):
        """The census's and `job list`'s progress: where the work is now."""
        if self.tokens is not None:  # a generation
            return "%d tokens" % self.tokens
        p = self.progress
        if p is None:
            return "epoch %s step %s" % self.position if self.position else "-"
        return "epoch %s batch %s/%s" % (p.get("epoch"), p.get("batch"), p.get("batches"))


def start(ctx, verb, work, columns=None, uses=(), notes=(), beside=False, job=None):
    """Register a job:// for work(report, should_stop) and start it. In the daemon it runs on the tensor
    thread, after the requests queued before it, one job at a time (state "queued" until its turn): PyTorch's
    OpenMP keeps a thread pool per calling thread, and a second pool made every parallel op ~20% slower on
    two cores (bench/fit.py). In-process (no server) on a thread of its own. columns: the rows' keys to show,
    in order (default: the first row's); uses: the objects the work trains, which `torch free` refuses while
    it runs; notes: lines its followers' stderr gets first, then `queued behind job://…` when a job is ahead.
    beside: work that mostly waits (serve) runs on a thread of its own, beside the jobs, and takes the tensor
    lock itself for each piece of tensor work (on the tensor thread: App.tensor_thread.run_soon). job: a Job of
    a subclass of the verb's own (serve/servejob.py), made with these verb, columns and uses. It counts among
    the daemon's running jobs (ctx.app.jobs: jobs/running.py) until it ends."""
    job = job or Job(verb, columns, uses)
    job.beside = beside
    job.handle = ctx.put(job, "job")
    tensor_thread = getattr(ctx.app, "tensor_thread", None)
    running = ctx.app.jobs
    ahead = running.newest_serial() if tensor_thread is not None and not beside else None
    job.among = running
    running.add(job)
    queued = ["queued behind %s (one job runs at a time; `torch job list` shows them)" % ahead.handle] if ahead else []
    for line in list(notes) + queued:
        job.report({"event": "note", "text": line})
    if tensor_thread is not None and not beside:
        job.state = "queued"
        tensor_thread.run_task(lambda: _run(ctx, job, work, tensor_thread))
    else:
        threading.Thread(target=_run, args=(ctx, job, work, None, beside), name="torchd-job-%s" % verb,
                         daemon=True).start()
    return job


def _run(ctx, job, work, tensor_thread=None, beside=False):
    app = ctx.app
    said = ctx.warned if getattr(ctx, "warned", None) is not None else ()  # the starting request printed these
    lock = (Beside if beside else StepLock)(app, "%s (%s)" % (job.verb, job.handle), tensor_thread,
                                            warned.Catch(job.say_warning, said), app.hooks.step)
    lock.take()
    job.state = "running"
    try:
        if job.should_stop():  # stopped while it waited its turn, or its follower left meanwhile: it never starts
            job.finish("stopped", EXIT_STOPPED, "torch: %s: stopped before it started%s"
                       % (job.verb, ": %s" % job.stop_reason if job.stop_reason else ""))
            return
        work(job.report, lambda: lock.between_steps() or job.should_stop())
    except TorchshError as e:
        _failed(job, e)
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError, MemoryError) as e:
        _failed(job, from_torch_exception(e))
    except BaseException:
        log.exception("job %s", job.handle)
        _failed(job, TorchshError("internal_error", "internal error", "see %s" % app.log_path))
    else:
        if job.stopped_early:
            job.finish("stopped", EXIT_STOPPED, "torch: %s: %s" % (job.verb, job.stopped_line()))
        else:
            job.finish("done", 0)
    finally:
        lock.give()
        if job.orphaned:  # a foreground run whose follower left: its handle was never shown; the log says how it ended
            log.info("%s %s (its follower had left)", job.handle, job.state)
            try:
                ctx.registry.free([job.handle])
            except TorchshError:
                pass


def _failed(job, err):
    err.op = err.op or job.verb
    # kept as data: a raised error's traceback holds the work's frames (its model, its batches) for as long as
    # the job is held, after `torch free` of them
    job.error = TorchshError(err.code, err.message, err.hint, op=err.op)
    job.finish("failed", protocol.exit_status(err.code), err.line())

