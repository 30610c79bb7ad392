"""The `jobs` tool: long work (fit, sweep, serve, lm generate) as a job of the daemon, through the job verbs a
shell uses (verbs/jobs.py), so a job an agent starts is one `torch job list` shows and the other way round.

- start: the command with --detach (its job:// at once).
- progress: a snapshot: state, where it is (`job list`'s progress: epoch and batch, or tokens), how many rows
  it has written and the last one (`job logs --json`: its epoch rows so far).
- result: waits up to wait_s for the job to end, polling `job list` (lock-free: it answers between any two
  steps) every POLL_S; each poll is an MCP progress notification when the client asked for them (a
  progressToken; the SDK sends nothing otherwise). Once it has ended: `job wait --json` (at once then): its
  rows, its exit status and its last line. A client that cancels the call stops the waiting, not the job.
- cancel: `job stop` (the job ends at its next step boundary; `fit --log DIR` saves its checkpoint there), and
  says where it stopped and how `fit … --resume auto` continues it.
- list: `job list`.
Each answer is bounded (bounded.py: ≤ 8 KB, a bigger one kept as a resource).
"""
import json
import time
from typing import Literal

import anyio
from mcp.server.mcpserver import Context

from torchsh import protocol
from torchsh.agents import bounded
from torchsh.errors import TorchshError

DESCRIPTION = ("Long work as jobs. start: argv of fit/sweep/serve/lm generate, run detached; gives job://… "
               "progress: state, epoch/batch, last row. result: waits up to wait_s (progress notifications), then "
               "the rows. cancel: stop at a step boundary; fit --log keeps a checkpoint (resume: --resume auto). "
               "list: all jobs.")
POLL_S = 1.0
MAX_WAIT_S = 3600.0
REMEMBERED = 256  # the started jobs whose argv a cancel can still name (the oldest forgotten first)
ENDED = ("done", "failed", "stopped")


def register(server, link, store):
    """Add the `jobs` tool to SERVER, speaking to the daemon through LINK, big answers kept in STORE."""
    tool = JobsTool(link, store)

    async def jobs(action: Literal["start", "progress", "result", "cancel", "list"], argv: list[str] | None = None,
                   job: str | None = None, wait_s: float = 0, ctx: Context = None):
        return await tool.act(action, argv, job, wait_s, ctx)
    server.add_tool(bounded.guarded(jobs), name="jobs", description=DESCRIPTION, structured_output=False)
    return tool


class JobsTool:
    """The tool's state: the argv of each job started here (cancel says how to resume it)."""

    def __init__(self, link, store):
        self.link, self.store = link, store
        self.started = {}  # job:// -> the argv it was started with (without --detach)

    async def act(self, action, argv, job, wait_s, ctx):
        if action == "list":
            return await self.command(["job", "list"])
        if action == "start":
            return await self.start(argv)
        if not job:
            raise TorchshError("missing_argument", "jobs %s needs job (a job:// handle)" % action,
                               "jobs(action=\"list\") shows them")
        if action == "progress":
            return bounded.text(json.dumps(await self.snapshot(job)), self.store, "progress")
        if action == "result":
            return await self.result(job, wait_s, ctx)
        return await self.cancel(job)

    async def command(self, argv):
        """A job verb's output as a bounded result (its error row when it failed)."""
        outcome = await self.link.cli(argv)
        if outcome.exit:
            return bounded.failed(outcome)
        return bounded.text(outcome.stdout, self.store, " ".join(argv[:2]))

    async def start(self, argv):
        argv = detached(argv)
        outcome = await self.link.cli(argv)
        if outcome.exit:
            return bounded.failed(outcome)
        handle = outcome.stdout.strip().splitlines()[-1] if outcome.stdout.strip() else ""
        self.started[handle] = [a for a in argv if a != "--detach"]
        while len(self.started) > REMEMBERED:
            self.started.pop(next(iter(self.started)))
        notes = [line for line in outcome.stderr.splitlines() if line.strip()][:5]
        return bounded.text(json.dumps({"job": handle, "notes": notes}), self.store, "start")

    async def snapshot(self, job):
        """{job, verb, state, progress, elapsed_s, rows, last_row}: a few hundred bytes whatever the job."""
        logs = await self.link.cli(["job", "logs", job, "--json"])  # checks the handle: its error row if wrong
        if logs.exit:
            raise error_of(logs)
        rows = json_lines(logs.stdout)
        found = await self.listed(job)
        return dict(found, rows=len(rows), last_row=rows[-1] if rows else None)

    async def listed(self, job):
        """JOB's row of `job list --json`: handle, verb, state, progress, elapsed_s."""
        outcome = await self.link.cli(["job", "list", "--json"])
        if outcome.exit:
            raise error_of(outcome)
        for row in json.loads(outcome.stdout or "[]"):
            if row.get("handle") == job:
                return {"job": job, **{k: v for k, v in row.items() if k != "handle"}}
        raise TorchshError("unknown_handle", "no job %s in `job list`" % job, "jobs(action=\"list\") shows them")

    async def result(self, job, wait_s, ctx):
        """Wait up to WAIT_S for JOB to end, a progress notification a poll; then its rows, or where it is."""
        row = await self.wait(job, min(max(0.0, float(wait_s or 0)), MAX_WAIT_S), ctx)
        if row["state"] not in ENDED:
            row["note"] = "still %s after %gs: call result again (a longer wait_s), or cancel" % (row["state"], wait_s)
            return bounded.text(json.dumps(row), self.store, "result")
        outcome = await self.link.cli(["job", "wait", job, "--json"])  # it has ended: answers at once
        body = ended_text(row, outcome)
        if outcome.exit and row["state"] == "failed":
            err = error_of(outcome)
            return bounded.error(err.code, err.message, err.hint, body)
        return bounded.text(body, self.store, "result")

    async def wait(self, job, wait_s, ctx):
        """Poll `job list` until JOB has ended or WAIT_S passed; report each poll as progress (seconds waited
        of wait_s, and where the job is). Cancelled by the client: the waiting ends, the job runs on."""
        began = time.monotonic()
        while True:
            row = await self.listed(job)
            waited = time.monotonic() - began
            if row["state"] in ENDED or waited >= wait_s:
                return row
            if ctx is not None:
                await ctx.report_progress(round(waited, 3), wait_s, progress_message(row))
            await anyio.sleep(min(POLL_S, wait_s - waited))

    async def cancel(self, job):
        """`job stop`: the daemon answers once the job has ended (at its next step boundary)."""
        outcome = await self.link.cli(["job", "stop", job])
        if outcome.exit:
            return bounded.failed(outcome)
        line = outcome.stdout.strip()
        answer = {"job": job, "stopped": line, **resume_advice(self.started.get(job))}
        return bounded.text(json.dumps(answer), self.store, "cancel")


def detached(argv):
    """The command to start: ARGV without a leading `torch`, with --detach (once)."""
    argv = [str(a) for a in argv or ()]
    if argv and argv[0] == "torch":
        argv = argv[1:]
    if not argv:
        raise TorchshError("missing_argument", "jobs start needs argv: the command to run as a job",
                           "e.g. [\"fit\", \"nn1\", \"optim2\", \"loader3\", \"--epochs\", \"5\", \"--log\", \"run\"]")
    return argv if "--detach" in argv else argv + ["--detach"]


def resume_advice(argv):
    """Where a stopped fit's checkpoint is and the command that continues it, from the argv it was started
    with (None: started elsewhere, so only what holds for every fit)."""
    if argv is None or not argv or argv[0] != "fit":
        return {"resume": "a fit started with --log DIR saved DIR/last.safetensors where it stopped: the same fit "
                          "with --resume auto continues it"}
    log = flag_value(argv, "--log")
    if log is None:
        return {"resume": "no --log: no checkpoint was written; the model and optimizer hold the last completed "
                          "step"}
    if "--version" in argv:
        return {"checkpoint": "%s/version_N/last.safetensors (N: the job's note `logging to …`)" % log,
                "resume": "the same fit with --log %s/version_N --resume auto" % log}
    again = without_flags(argv, {"--resume": 1, "--overwrite": 0}) + ["--resume", "auto"]
    return {"checkpoint": "%s/last.safetensors" % log.rstrip("/"), "resume_argv": again}


def flag_value(argv, flag):
    """The value after FLAG (or in FLAG=VALUE), the last one given; None without it."""
    value = None
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(flag + "="):
            value = a[len(flag) + 1:]
    return value


def without_flags(argv, flags):
    """ARGV less each flag of FLAGS ({flag: how many values follow it}), in either spelling."""
    out, skip = [], 0
    for a in argv:
        if skip:
            skip -= 1
        elif a in flags:
            skip = flags[a]
        elif not any(a.startswith(f + "=") for f in flags):
            out.append(a)
    return out


def json_lines(text):
    """The JSON objects of TEXT, one a line (a cut-off last line is left out)."""
    rows = []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def progress_message(row):
    return "%s %s: %s, %s" % (row.get("verb"), row["job"], row["state"], row.get("progress"))


def ended_text(row, outcome):
    """An ended job's answer: one JSON line (job, verb, state, exit, rows, its last line), then its rows."""
    rows = outcome.stdout if outcome.stdout.endswith("\n") or not outcome.stdout else outcome.stdout + "\n"
    last = [line for line in outcome.stderr.splitlines() if line.strip()][-1:]
    head = dict(row, exit=outcome.exit, rows=len(json_lines(outcome.stdout)), line=last[0] if last else None)
    return json.dumps(head) + "\n" + rows


def error_of(outcome):
    """A failed command's error row as a TorchshError."""
    err = outcome.error or {}
    code = err.get("code") or "internal_error"
    return TorchshError(code if code in protocol.ERRORS else "internal_error", err.get("message") or "failed",
                        err.get("hint"))
