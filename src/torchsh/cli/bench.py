"""`torch bench OP ARGS…` (its verb: verbs/bench.py): one PyTorch op timed by PyTorch's own
torch.utils.benchmark.Timer, alone and as the daemon handles the same command through this face (cli/run.py), so
that a user sees what the daemon adds.

The two figures, each from Timer.adaptive_autorange (the median and IQR of the time per run, and how many
runs it chose), and what each includes:
- pytorch: the bound call alone, `fn(*args, **kwargs)`, with the values the CLI converted from the words
  (handles looked up once, before timing): what the op costs in a Python script.
- daemon: the request the same words make, handled by cli/run.run_cli as POST /v1/cli handles it (resolve
  the name, parse, bind, look the handles up, convert, call, register the result as a handle, render its
  text), then that handle freed again. It leaves out the socket and the caller: the `torch` process or the
  bash function, the connection, the HTTP framing and the hand-off to the tensor thread (bench/latency.py
  times those round trips from a shell), and the tensor lock's acquire (bench holds it: one uncontended
  acquire is a microsecond or so).
- overhead: daemon median - pytorch median.
A figure whose IQR is 10% of its median or more gets the warning PyTorch's Measurement gives it, on stderr.

Why in the daemon and not N requests from the client: each request is a turn on the one tensor thread, so
N requests timed by a client measure the queue as much as the path, and a client that times would no
longer be the tiny builtins-only one. Here both Timers run on the tensor thread, under the tensor lock,
back to back, with the same thread count: a difference of two medians taken alike.

What bench leaves behind: nothing. Every result is dropped (the timed requests' handles are freed as they
are made, so the census does not grow), no history entry is written, and the random generator is put back
(`torch bench randn 3` leaves `torch history --python`'s replay unchanged). Ops that change what they are
given, verbs, jobs and block forms are refused before anything runs.
"""
import contextlib
import warnings

import torch
from torch.utils.benchmark import Timer

from torchsh.call import bind, parse, policy
from torchsh.call.invoke import call_args, convert_all, grad_mode, invoke
from torchsh.call.misfit import no_binding
from torchsh.cli.run import run_cli
from torchsh.context import Context
from torchsh.errors import TorchshError, bad_argument

# The tensor lock is held for both Timers (about twice max_run_time, plus PyTorch's block-size estimate and one
# last block of runs): the default keeps that near two seconds, and the limit keeps any queue waiting well short
# of a minute. PyTorch's own default (10 s) would hold every other command up for twenty.
MAX_RUN_TIME_DEFAULT = 1.0
MAX_RUN_TIME_LIMIT = 30.0


class BenchRecord(dict):
    """{op, pytorch: {median_s, iqr_s, runs, measurements}, daemon: {…}, overhead_s, num_threads}; as text,
    aligned columns."""

    def text(self):
        rows = [("", "median", "IQR", "runs")]
        for key, label in (("pytorch", "the call alone"), ("daemon", "the request in torchd")):
            m = self[key]
            rows.append((label, _duration(m["median_s"]), _duration(m["iqr_s"]), str(m["runs"])))
        rows.append(("overhead", _duration(self["overhead_s"]), "", ""))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        threads = "%d thread%s" % (self["num_threads"], "" if self["num_threads"] == 1 else "s")
        lines = ["%s (%s, torch.utils.benchmark.Timer.adaptive_autorange):" % (self["op"], threads)]
        for row in rows:
            cells = [cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
            lines.append(("  " + "  ".join(cells)).rstrip())
        lines.append("the call alone: torch.%s(...) on the converted arguments, as a script calls it" % self["op"])
        lines.append("the request in torchd: `torch %s ...` as /v1/cli handles it (parse, bind, convert, call,"
                     " register, render; its handle freed), without the socket and the client" % self["op"])
        return "\n".join(lines) + "\n"


def _duration(seconds):
    """1.23 us, 45.6 ms: three significant digits in the unit that reads best (negative: the overhead's noise)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return "%.3g %s" % (seconds / scale, unit)
    return "%.3g ns" % (seconds / 1e-9)


def bench(ctx, words, min_run_time, max_run_time, num_threads):
    """`torch bench`'s record for WORDS (`OP ARGS…`): the op alone and the request in torchd, each timed by
    Timer.adaptive_autorange; the spread warned of on stderr."""
    _check_budget(min_run_time, max_run_time, num_threads)
    op, parsed, binding = _bound(ctx, words)
    threads = num_threads or torch.get_num_threads()
    inner = Context(_HeldLockApp(ctx.app), ctx.cwd, ctx.env, stdin_is_tty=True)
    with _forked_rng():
        values = {}
        invoke(inner, op, binding, parsed.globals, convert=_keeping(values))  # the CLI's checks and errors, once
        args, kwargs = call_args(op, binding.overload, values, ctx)
        with grad_mode(ctx, parsed.globals):
            alone = _timed("fn(*args, **kwargs)", dict(fn=op.call, args=args, kwargs=kwargs), threads,
                           min_run_time, max_run_time)
        request = _request(ctx, inner.app, words)
        request()  # once outside the Timer: a request that fails where the call did not stops bench here
        daemon = _timed("request()", dict(request=request), threads, min_run_time, max_run_time)
    for label, figure in (("the call alone", alone), ("the request in torchd", daemon)):
        note = spread_note(figure["iqr_s"], figure["median_s"])
        if note:
            warnings.warn("%s: %s" % (label, note))
    return BenchRecord(op=op.name, pytorch=alone, daemon=daemon, overhead_s=daemon["median_s"] - alone["median_s"],
                       num_threads=threads)


# What torch.utils.benchmark's Measurement warns of, at its thresholds (an IQR of 10% of the median or more: system
# fluctuation; from 25%: significant environmental influence): a figure to take with care, said on stderr
SPREAD_WARN, SPREAD_GROSS = 0.1, 0.25


def spread_note(iqr, median):
    """The warning PyTorch's Timer gives a measurement this spread out, or None."""
    ratio = iqr / median if median > 0 else 0.0
    if ratio < SPREAD_WARN:  # Measurement.meets_confidence
        return None
    why = ("this suggests significant environmental influence" if ratio >= SPREAD_GROSS
           else "this could indicate system fluctuation")
    return "the IQR is %.1f%% of the median: %s (rerun on a quieter machine, or raise --max_run_time)" % (
        ratio * 100, why)


def _check_budget(min_run_time, max_run_time, num_threads):
    if not 0 < max_run_time <= MAX_RUN_TIME_LIMIT:
        raise bad_argument("--max_run_time must be over 0 and at most %g seconds" % MAX_RUN_TIME_LIMIT,
                           "the tensor lock is held while timing: other commands wait")
    if not 0 < min_run_time <= max_run_time:
        raise bad_argument("--min_run_time must be over 0 and at most --max_run_time (%g)" % max_run_time)
    if num_threads is not None and not 1 <= num_threads <= 1024:
        raise bad_argument("--num_threads must be from 1 to 1024")


def _bound(ctx, command):
    """(op, parsed words, binding) for `torch OP ARGS…`, found as the CLI finds them; refusals first."""
    if not command:
        raise TorchshError("missing_argument", "bench needs an op to time", "usage: torch bench OP ARGS…")
    op, fixed, words = ctx.table.resolve(command)
    _refuse(op)
    policy.check(ctx.policy, op)  # the op it times runs under the caller's policy, as a command of its own
    parsed = parse.split_argv(op, words, fixed)
    if parsed.argv_rest is not None:
        raise TorchshError("usage", "bench times one op: %s takes no command after --" % op.name, op.usage())
    positionals, flags = parse.named(parsed.positionals, parsed.flags, ctx.registry.names.lookup)
    if any(t.cls == "stdin" for t in positionals + list(flags.values()) if not isinstance(t, list)):
        raise TorchshError("usage", "bench reads no handles from stdin", "name them: torch bench %s $t" % op.name)
    binding, partials = bind.choose(op, positionals, flags)
    if binding is None:
        raise no_binding(op, partials, positionals, flags)
    return op, parsed, binding


def _refuse(op):
    """Only PyTorch ops that compute are timed: running anything else hundreds of times would change state."""
    name = op.display_name
    if op.writes:
        why = "%s changes the objects it is given: timing it would run it hundreds of times" % name
    elif op.block or op.group:
        why = "%s is %s" % (name, "a block form" if op.block else "a group of commands")
    elif op.replies:
        why = "%s runs a job or answers with a reply besides its output" % name
    elif op.verb:
        why = "%s is a torchsh verb, not a PyTorch op" % name
    else:
        return
    raise TorchshError("usage", "bench times PyTorch ops that only compute; " + why,
                       "time a computing op, e.g. torch bench matmul $a $b (`torch ops` lists them)")


class _HeldLockApp:
    """The daemon's App as the timed requests see it: its tensor lock is the one bench already holds (taking
    it again would wait for bench itself), and no hook sees them: no history entry (bench changes nothing)."""
    history = hooks = None

    def __init__(self, app):
        self._app = app

    def __getattr__(self, name):
        return getattr(self._app, name)

    def tensor_lock(self, op=None):
        return contextlib.nullcontext()


def _request(ctx, app, command):
    """A function that handles `torch COMMAND` as /v1/cli does, then frees what it made."""
    fields = dict(argv=list(command), cwd=ctx.cwd, env=ctx.env, stdin_is_tty=True, stdin=None)
    registry = ctx.registry

    def request():
        with registry.recording() as made:
            reply = run_cli(app, fields)
        registry.free_unclaimed(made)
        if reply.exit:
            raise TorchshError("torch_error", "the command failed in the daemon: %s" % reply.stderr.strip(),
                               "run it as `torch %s` to see it fail alone" % " ".join(command))
    return request


def _timed(stmt, names, threads, min_run_time, max_run_time):
    m = Timer(stmt=stmt, globals=names, num_threads=threads).adaptive_autorange(
        min_run_time=min_run_time, max_run_time=max_run_time)
    return {"median_s": m.median, "iqr_s": m.iqr, "runs": len(m.times) * m.number_per_run,
            "measurements": len(m.times)}


def _keeping(values):
    """invoke's convert, keeping the converted values for the Timer's call (convert_all's, looked up once)."""
    def convert(ctx, binding):
        values.update(convert_all(ctx, binding))
        return values
    return convert


def _forked_rng():
    """The random generators put back afterwards: the CPU's, and CUDA's when this daemon has started CUDA
    (forking an unstarted one would start it)."""
    return torch.random.fork_rng(devices=range(torch.cuda.device_count()) if torch.cuda.is_initialized() else [])
