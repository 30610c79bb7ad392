"""Folded stacks from a chrome trace's events: one line per distinct stack, `frame;frame;frame COUNT`, COUNT the
stack's self time in whole microseconds, summed over its occurrences. flamegraph.pl, speedscope and inferno read
it as it stands.

PyTorch's own export_stacks writes nothing in this release, so the stacks are rebuilt from the trace: on each
thread that ran an op, the complete events (ph "X") of Python functions (with_stack), user annotations and ops nest by time
(an event inside another's span is its child), and an event's self time is its duration less its children's.
"""
import re

NESTED = frozenset({"python_function", "user_annotation", "cpu_op"})
EPS_US = 0.01  # timestamps are microseconds with nanosecond digits: a child may end a rounding after its parent
_ADDRESS = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+")  # `<built-in method mm of … object at 0x7f…>`
_SPACES = re.compile(r"\s+")


def frame_name(name):
    """An event's name as one frame: no address (so equal calls fold together), no `;` (the separator),
    whitespace as single spaces."""
    return _SPACES.sub(" ", _ADDRESS.sub("", str(name))).replace(";", ":").strip() or "?"


def folded_lines(events):
    """The folded lines for a trace's events, sorted; stacks whose self time rounds to 0 us are left out."""
    totals = {}
    for thread_events in _by_thread(events).values():
        _fold_thread(thread_events, totals)
    lines = []
    for stack in sorted(totals):
        us = round(totals[stack])
        if us >= 1:
            lines.append("%s %d" % (stack, us))
    return lines


def _by_thread(events):
    threads = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in NESTED and isinstance(e.get("dur"), (int, float)) \
                and isinstance(e.get("ts"), (int, float)):
            threads.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    # The Python tracer follows every thread of the daemon; those that ran no op (the socket loop, the lock-free
    # workers) only wait, and their waits would tower over the work
    return {k: v for k, v in threads.items() if any(e["cat"] == "cpu_op" for e in v)}


class _Open:
    __slots__ = ("path", "end", "dur", "children")

    def __init__(self, path, end, dur):
        self.path, self.end, self.dur, self.children = path, end, dur, 0.0


def _fold_thread(events, totals):
    """Nest one thread's events by time (outer first where two start together) and add each stack's self time."""
    events.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in events:
        start, dur = float(e["ts"]), max(float(e["dur"]), 0.0)
        while stack and stack[-1].end < start + dur - EPS_US:  # not inside the open event: that one has ended
            _close(stack.pop(), totals)
        if stack:
            stack[-1].children += dur
        name = frame_name(e.get("name"))
        stack.append(_Open(stack[-1].path + ";" + name if stack else name, start + dur, dur))
    while stack:
        _close(stack.pop(), totals)


def _close(event, totals):
    totals[event.path] = totals.get(event.path, 0.0) + max(event.dur - event.children, 0.0)
