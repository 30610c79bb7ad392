"""A follower's replies: what the job said since its offset, and, until the job has ended, the follow reply
(results.Follow) naming the next poll, `job poll J VIEW --offset N`. The client, the bash and zsh
functions and torch.nu carry it out: print, poll again, and exit with the status of the reply that has none.
For a caller that cannot, the daemon follows the job itself (`to_end`, protocol.DAEMON) and answers once.

Each poll waits for news at most MAX_WAIT_S (a terminal's live line: render.LIVE_POLL_S), on the job's
condition, without the tensor lock: the job verbs are lock-free, and answer between any two steps.
A foreground run ("run" view) is leased to its follower: every poll of it renews the lease (jobs/job.py).
"""
from torchsh.errors import TorchshError
from torchsh.jobs import render
from torchsh.jobs.job import EXIT_STOPPED
from torchsh.results import Follow, Streams

MAX_WAIT_S = 1.0
# A generation's tokens come every few ms: a poll per token would take the GIL from the generation that many
# times (each poll is a request the daemon parses and answers). Gathered for this long, text still flows at
# 30 updates a second, and the job's end is answered at once.
GATHER_S = 0.033


def reply(ctx, job, view, offset=0, as_json=False, wait=0.0):
    """This poll's reply: Streams once the job has ended (stdout, stderr, its status), else a Follow."""
    live = ctx.stderr_is_tty and view in ("run", "logs")
    if view == "run" and job.ended is None:
        job.lease()
    if wait > 0:
        job.wait_for(offset, min(wait, render.LIVE_POLL_S if live else MAX_WAIT_S))
        if job.tokens is not None:  # streamed text: a poll carries the tokens of GATHER_S, not one each
            job.wait_ended(GATHER_S)
    seen = render.poll(job, view, offset, ctx.stderr_is_tty, as_json)
    if seen.ended:
        if view == "run":  # a foreground run's handle was never shown: it goes with its last reply
            _forget(ctx, job)
            _hand_over_files(ctx, job)
        status = 0 if view == "stop" else job.exit
        return Streams(seen.stdout, seen.stderr, status, job.error if status else None)
    return Follow(seen.stdout, seen.stderr, job, view, seen.offset, as_json)


def to_end(ctx, first, client_gone):
    """Follow a job in the daemon for a caller that cannot follow (protocol.DAEMON): Streams of all it said,
    once it has ended; None when the client left first. The request's connection holds the lease: a client
    gone stops a foreground run at its next step boundary, as Ctrl-C would."""
    ctx.stderr_is_tty = False  # one answer at the end: plain progress lines, never a live one
    out, err, now = [first.stdout], [first.stderr], first
    while isinstance(now, Follow):
        if client_gone():
            if now.view == "run":
                now.job.leave("its client disconnected")
            return None
        now = reply(ctx, now.job, now.view, now.offset, now.as_json, wait=MAX_WAIT_S)
        out.append(now.stdout)
        err.append(now.stderr)
    return Streams("".join(out), "".join(err), now.exit, now.error)


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
