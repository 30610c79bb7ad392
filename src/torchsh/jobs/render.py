"""What a follower of a job sees: one poll's stdout, stderr and whether the job has ended.

Views: "run" (a foreground `torch fit`) and "logs" (`job logs`): epoch rows (`lm generate`: its text as it
streams) on stdout, progress and
the final line on stderr; "wait": rows and the final line; "stop": only, once the job has ended,
where it stopped. Progress on a terminal (the follower says its stderr is one) is a live line
redrawn with \\r; otherwise the job's plain lines: a log never holds a carriage return.

A poll answers with events of ONE stream (stdout or stderr), in order, so the client can write its
stderr part first: on a terminal, the live progress line is cleared before a row is printed under it.
"""
from dataclasses import dataclass

from torchsh.jobs.job import progress_text
from torchsh.text.jsonout import json_bytes

VIEWS = ("run", "logs", "wait", "stop")
CLEAR = "\r\x1b[K"  # back to the line's start, erase to its end: the live line's redraw
LIVE_POLL_S = 0.25  # a terminal's live line is redrawn at least this often
_STREAM = {"row": "out", "text": "out", "end": "out", "plain": "err", "note": "err", "err": "err"}


@dataclass
class Poll:
    stdout: str
    stderr: str
    offset: int       # where the next poll starts
    ended: bool       # the job has ended and this poll showed its last events


def poll(job, view, offset, tty=False, as_json=False):
    """The events after `offset` that `view` shows, as text (the caller has waited on the job)."""
    live = tty and view in ("run", "logs")
    with job.changed:
        events, ended, progress = job.events[offset:], job.ended is not None, job.progress
    out, err, stream, used = [], [], None, 0
    for kind, payload in events:
        shown = view != "stop" and not (kind == "plain" and (live or view == "wait"))
        if shown:
            if stream is not None and _STREAM[kind] != stream:
                break  # one stream per poll
            stream = _STREAM[kind]
            if kind == "row":
                out.append(_row_text(job, payload, as_json))
            elif kind == "text":  # streamed text as it is; --json: a line per piece
                out.append(json_bytes(payload).decode() + "\n" if as_json else payload["text"])
            elif kind == "end":  # the closing row: --json's last line; the streamed text's newline otherwise
                out.append(json_bytes(payload).decode() + "\n" if as_json else "\n")
            else:
                err.append(payload)
        used += 1
    done = ended and used == len(events)
    if view == "stop" and done:
        out.append((job.stopped_line() if job.state == "stopped" else "%s already %s" % (job.handle, job.state))
                   + "\n")
    if live:
        if stream is not None or done:
            err.insert(0, CLEAR)
        elif progress is not None:
            err.append("\r" + progress_text(progress) + "\x1b[K")
    return Poll("".join(out), "".join(err), offset + used, done)


def _row_text(job, row, as_json):
    if as_json:
        return json_bytes(row).decode() + "\n"
    # a list (fit's confusion matrix) fits no aligned column: it is in the --json rows only
    columns = [c for c in job.columns or list(row) if not isinstance(job.first_row.get(c), list)]
    widths = [_width(c, job.first_row) for c in columns]
    line = _cells(widths, [_cell(c, row.get(c)) for c in columns])
    if row is job.first_row:
        return _cells(widths, columns) + "\n" + line + "\n"
    return line + "\n"


def _width(column, first_row):
    """Fixed widths (rows come one at a time: no later row can widen a column): counts (epoch) take
    5 digits, numbers %.6g's 9 characters, a header its own length when longer."""
    return max(len(column), 5 if isinstance(first_row.get(column), int) else 9)


def _cells(widths, texts):
    return "  ".join(t.ljust(w) for t, w in zip(texts, widths)).rstrip()


def _cell(key, value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return "%.2f" % value if key == "seconds" else "%.6g" % value
    return str(value)
