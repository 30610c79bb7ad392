"""Jobs from the shell: job list, logs [-f], wait, stop, and poll (what a follower sends).

A job is long work in the daemon (`torch fit … --detach` makes one; a foreground `torch fit` is one
the client follows). Every job verb is lock-free: it reads what the job said and answers between
any two of its steps. docs/jobs.md has the whole story.
"""
import time

from torchsh.errors import TorchshError
from torchsh.jobs import render
from torchsh.jobs.follow import everything, reply
from torchsh.jobs.job import clock
from torchsh.verbs import verb

COLUMNS = ("HANDLE", "VERB", "STATE", "PROGRESS", "ELAPSED")
# a short detached fit, for the examples
_JOB = ("m=$(torch nn linear 2 1); o=$(torch optim sgd $m); "
        "L=$(torch data loader $(torch data tensors $(torch randn 64 2) $(torch randn 64 1)) --batch_size 16); "
        "j=$(torch fit $m $o $L --epochs 2 --detach); ")


@verb("job.list() -> Json", category="objects", lockfree=True, examples=("torch job list",), read_only=True)
def job_list(ctx):
    """Every job held, as a table: HANDLE VERB STATE (queued, running, done, failed, stopped) PROGRESS ELAPSED.
    --json: rows."""
    now = time.time()
    rows = [{"handle": h, "verb": e.obj.verb_word, "state": e.obj.state, "progress": e.obj.progress_text(),
             "elapsed_s": round((e.obj.ended or now) - e.obj.started, 3)}
            for h, e in ctx.registry.items() if e.kind == "job"]
    return JobRows(rows)


class JobRows(list):
    """Rows that print as an aligned table with a header (JSON under --json and through the API)."""

    def text(self):
        cells = [COLUMNS] + [(r["handle"], r["verb"], r["state"], r["progress"], clock(r["elapsed_s"]))
                             for r in self]
        widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS) - 1)]
        return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] + "\n" for row in cells)


@verb("job.logs(Job job, *, bool follow=False, bool json=False) -> None", category="objects", lockfree=True,
      replies=("follow",),
      examples=(_JOB + "torch job logs $j -f",), read_only=True)
def job_logs(ctx, job, follow=False, json=False):
    """What job JOB said: its epoch rows on stdout (JSON lines with --json), its progress lines on stderr.

    Args:
        follow: -f: and what it says next, until it ends (exit: its status); Ctrl-C leaves the job running
        json: rows as JSON lines

    Without -f, progress is plain lines (one per epoch and every 30 s), never a carriage return; with
    -f on a terminal, a live line as a foreground `torch fit` shows.
    """
    return reply(ctx, job, "logs", 0, json) if follow else everything(job, json)


@verb("job.wait(Job job, *, bool json=False) -> None", category="objects", lockfree=True, replies=("follow",),
      examples=(_JOB + "torch job wait $j --json",), read_only=True)
def job_wait(ctx, job, json=False):
    """Wait for job JOB to end; print its epoch rows; exit with its status (0 done, 130 stopped, or the
    failure's, whose line goes to stderr). Ctrl-C stops waiting, not the job.

    Args:
        json: rows as JSON lines
    """
    return reply(ctx, job, "wait", 0, json)


@verb("job.stop(Job job) -> None", category="objects", lockfree=True, replies=("follow",),
      examples=(_JOB.replace("--epochs 2", "--epochs 1000") + "torch job stop $j",))
def job_stop(ctx, job):
    """Stop job JOB at its next step boundary and print where: `stopped at epoch E step S`. The model
    and optimizer keep the last completed step. A job that has already ended is left as it is."""
    job.request_stop()
    return reply(ctx, job, "stop", 0)


@verb("job.poll(Job job, str view, *, int offset=0, float wait=1.0, bool json=False, bool interrupt=False) -> None",
      category="objects", lockfree=True, replies=("follow",), examples=(_JOB + "torch job poll $j wait --offset 0",))
def job_poll(ctx, job, view, offset=0, wait=1.0, json=False, interrupt=False):
    """One bounded poll of job JOB's output after OFFSET (what `torch` sends while it follows a job).

    Args:
        view: run (a foreground fit), logs, wait or stop: what the poll shows
        offset: where the previous poll ended (its follow directive names the next offset)
        wait: seconds to wait for news, at most 1 (0.25 on a terminal, to redraw the live line)
        json: rows as JSON lines
        interrupt: stop the job at its next step boundary first (Ctrl-C on a foreground run)
    """
    if view not in render.VIEWS:
        raise TorchshError("bad_argument", "unknown view %r" % view, "views: %s" % ", ".join(render.VIEWS))
    if offset < 0:
        raise TorchshError("bad_argument", "--offset must be 0 or more, not %d" % offset)
    if interrupt:
        job.request_stop()
    return reply(ctx, job, view, offset, json, wait=max(0.0, wait))
