"""`torch profile -- CMD`: the work CMD's `torch` commands send this daemon, recorded by torch.profiler, written
as DIR/trace.json (Perfetto, chrome://tracing) and DIR/stacks.folded (flamegraph.pl, speedscope), and
summed up as the top-N ops table on stdout.

A block form (an exec reply, like `torch scope -- CMD`): `profile` starts the recording on the tensor thread
and answers "run CMD, then send `profile finish ID`"; the caller runs CMD in its own world and sends that,
whatever CMD's status, and exits with CMD's. `profile finish` stops the recording (on the tensor thread
again), writes the files and answers the table. The recording's life and its ends (a dropped caller, --steps,
--max_s) are profile/recording.py's; the folding and the table are profile/folded.py's and profile/table.py's.
"""
import json
import os
import tempfile
import warnings

from torchsh import fileio, memory
from torchsh.errors import TorchshError, bad_argument
from torchsh.profile import folded, recording, table
from torchsh.results import Exec
from torchsh.verbs import verb

MAX_S_LIMIT = 24 * 3600.0


@verb("profile(*, Argv command, str? out=None, int top=20, str sort=\"self_cpu\", str format=\"text\", "
      "int? steps=None, float max_s=600, bool overwrite=False) -> None", category="tensors", block=True,
      examples=("torch profile -- bash -c 'torch matmul $(torch randn 64 64) $(torch randn 64 64) >/dev/null'",
                "torch profile --out prof --top 5 --format tsv -- bash -c 'torch sum $(torch randn 1000)'"))
def profile(ctx, command, out=None, top=20, sort="self_cpu", format="text", steps=None, max_s=600.0,
            overwrite=False):
    """Run CMD under torch.profiler: its `torch` commands' ops are recorded, then the top-N ops table is printed.

    With --out DIR it also writes DIR/trace.json (Perfetto, chrome://tracing) and DIR/stacks.folded
    (flamegraph.pl, speedscope); a DIR that holds a profile already is refused (run_exists) before CMD runs,
    unless --overwrite. One profile at a time per daemon (busy). Exits with CMD's status.

    Args:
        command: the command to run; its `torch` commands go to this daemon
        out: the folder for trace.json and stacks.folded (made if missing); without it, the table alone
        top: how many ops the table lists
        sort: the table's order: self_cpu, total_cpu, calls or memory (self CPU memory), most first
        format: the table as text (aligned columns), tsv (with a header) or json (a list of records)
        steps: record N steps of a job CMD runs (`torch fit`): from the end of its first step, N steps
        max_s: stop recording after this many seconds (the trace grows with the work): the files and table
            cover that much, with a note
        overwrite: replace the trace.json and stacks.folded that --out DIR holds already
    """
    if not command:
        raise TorchshError("usage", "profile needs a command after --",
                           "e.g. torch profile -- bash -c 'torch matmul $(torch randn 64 64) $(torch randn 64 64)'")
    _check(recording.Settings(out, top, sort, format, steps, max_s))
    if overwrite and out is None:
        raise bad_argument("--overwrite replaces the files in --out DIR; give --out",
                           "torch profile --out prof --overwrite -- CMD")
    folder = _folder(ctx, out, overwrite)  # made once all else is right
    settings = recording.Settings(folder, top, sort, format, steps, max_s, _max_growth(ctx))
    run_on_tensor_thread = _tensor_thread(ctx)
    rec = recording.begin(settings, run_on_tensor_thread)
    if ctx.hold is not None:  # a killed client's connection drops: stop and drop, never leave it recording
        ctx.hold(lambda: recording.caller_gone(rec, run_on_tensor_thread))
    return Exec(command, {}, ["profile", "finish", rec.id])


@verb("profile.finish(str id) -> Json", category="tensors",
      examples=("torch profile -- true",))
def profile_finish(ctx, id):
    """End profile ID (the closing command `torch profile -- CMD` sends after CMD): write its files, print its table."""
    rec = recording.finish(id)
    s = rec.settings
    if rec.profiler is None:  # --steps and no job step ran, or the profiler could not start or stop
        warnings.warn(rec.note or "nothing was recorded: CMD ran no job step (--steps counts a `torch fit`'s steps)")
        return table.rendered([], _columns(rec), s.format)
    if rec.note:
        warnings.warn(rec.note)
    rows = table.rows(_events(rec, s.out))
    if rec.cuda:
        table.add_cuda(rows, rec.profiler.key_averages())
    return table.rendered(table.top(rows, s.sort, s.top), _columns(rec), s.format)


def _events(rec, out):
    """The trace's events; with --out, trace.json and stacks.folded written there (each atomically)."""
    if out is None:
        with tempfile.TemporaryDirectory(prefix="torchsh-profile-") as scratch:
            path = os.path.join(scratch, "trace.json")
            rec.profiler.export_chrome_trace(path)
            return _read_trace(path)
    path = os.path.join(out, "trace.json")
    fileio.atomic_write(path, rec.profiler.export_chrome_trace)
    events = _read_trace(path)
    lines = folded.folded_lines(events)
    fileio.atomic_write(os.path.join(out, "stacks.folded"), lambda tmp: _write_lines(tmp, lines))
    return events


def _read_trace(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("traceEvents", [])
    except (OSError, ValueError) as e:
        raise fileio.file_error(path, "read back", e) from None


def _write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def _columns(rec):
    return table.CPU_COLUMNS + (table.CUDA_COLUMNS if rec.cuda else ())


FILES = ("trace.json", "stacks.folded")


def _folder(ctx, out, overwrite):
    """--out as a folder made now, before CMD runs (a file in its way is refused at once, and so is a folder that
    holds a profile already, unless --overwrite: a user's earlier profile is never replaced silently)."""
    if out is None:
        return None
    name = ctx.context_name
    if name != "default" and not str(out).startswith(name + ":"):  # the files are written after CMD, by finish
        raise TorchshError("remote_path", "--out %s: on context %s the profile is written on the daemon's host"
                           % (out, name), "write --out %s:/absolute/path" % name)
    folder = ctx.path(out, "dir_out")
    held = [name for name in FILES if os.path.lexists(os.path.join(folder, name))]
    if held and not overwrite:
        raise TorchshError("run_exists", "--out %s holds a profile already (%s)" % (out, ", ".join(held)),
                           "profile into a new folder, or replace it: torch profile --out %s --overwrite -- CMD" % out)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise fileio.file_error(folder, "make the folder", e) from None
    return folder


def _check(s):
    if not 1 <= s.top <= 10000:
        raise bad_argument("--top must be from 1 to 10000")
    if s.sort not in table.SORTS:
        raise bad_argument("--sort must be one of %s" % ", ".join(table.SORTS))
    if s.format not in table.FORMATS:
        raise bad_argument("--format must be one of %s" % ", ".join(table.FORMATS))
    if s.steps is not None and s.steps < 1:
        raise bad_argument("--steps must be 1 or more")
    if not 0 < s.max_s <= MAX_S_LIMIT:
        raise bad_argument("--max_s must be over 0 and at most %g seconds (a day)" % MAX_S_LIMIT,
                           "the trace grows with the work recorded")


def _max_growth(ctx):
    """The memory a recording may grow the daemon by: a quarter of the room its budget has left (the trace is read
    back for the table, at several times its size); None without a budget."""
    budget = getattr(ctx.app, "memory", None)
    if budget is None or budget.limit is None:
        return None
    return max(0, budget.limit - memory.rss_bytes()) // 4


def _tensor_thread(ctx):
    """fn -> fn run on the tensor thread (after the work queued before it); in-process (no server): at once."""
    workers = getattr(ctx.app, "tensor_thread", None)
    return workers.run_task if workers is not None else (lambda fn: fn())
