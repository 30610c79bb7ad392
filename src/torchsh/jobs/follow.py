"""A follower's replies: what the job said since its offset, and, until the job has ended, a follow
directive naming the next poll, `job poll J VIEW --offset N` (the CLI face sends it as the header
protocol.H_FOLLOW). The client and the bash function carry it out: print, poll again, and exit with
the status of the reply that has none.

Each poll waits for news at most MAX_WAIT_S (a terminal's live line: render.LIVE_POLL_S), on the job's
condition, without the tensor lock: the job verbs are lock-free, and answer between any two steps.
"""
from torchsh.call.results import Streams
from torchsh.errors import TorchshError
from torchsh.jobs import render
from torchsh.jobs.job import EXIT_STOPPED

MAX_WAIT_S = 1.0


def reply(ctx, job, view, offset=0, as_json=False, wait=0.0):
    """This poll's Streams: stdout, stderr, and the next poll's words (follow) or the final status."""
    live = ctx.stderr_is_tty and view in ("run", "logs")
    if wait > 0:
        job.wait_for(offset, min(wait, render.LIVE_POLL_S if live else MAX_WAIT_S))
    seen = render.poll(job, view, offset, ctx.stderr_is_tty, as_json)
    if seen.ended:
        if view == "run":  # a foreground run's handle was never shown: it goes with its last reply
            _forget(ctx, job)
            _hand_over_files(ctx, job)
        return Streams(seen.stdout, seen.stderr, 0 if view == "stop" else job.exit)
    words = ["job", "poll", job.handle, view, "--offset", str(seen.offset)] + (["--json"] if as_json else [])
    stops = "1" if view == "run" else "0"  # Ctrl-C stops a foreground run; it only leaves a follower
    return Streams(seen.stdout, seen.stderr, follow=" ".join([stops] + words))


def _hand_over_files(ctx, job):
    """What the run wrote for a remote caller (`fit --log DIR`) goes with its last reply (the CLI face names
    it: remote/staging.py): fetched when the run finished or was stopped (its checkpoint resumes it),
    removed when it failed. Every last reply names them: a Ctrl-C can lose one, and the client polls again."""
    if job.exit in (0, EXIT_STOPPED):
        ctx.downloads.extend(job.downloads)
    else:
        ctx.app.staging.remove_ids(stage_id for stage_id, _ in job.downloads)
        job.downloads = []


def _forget(ctx, job):
    try:
        ctx.registry.free([job.handle])
    except TorchshError:
        pass  # freed already (`torch free --all` meanwhile)


def everything(job, as_json=False):
    """`job logs J` without -f: all it said so far, plain lines and no live line (a log, not a terminal)."""
    out, err, offset = [], [], 0
    while True:
        seen = render.poll(job, "logs", offset, False, as_json)
        out.append(seen.stdout)
        err.append(seen.stderr)
        if seen.offset == offset:
            return Streams("".join(out), "".join(err))
        offset = seen.offset
