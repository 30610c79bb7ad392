"""Repeats in the script: K requests in a row that do the same thing N times become one `for _ in range(N):`.

Lines are written with each handle as a placeholder (python.Writer.v), so two passes of a loop's body are the
same text once the handles each pass makes are numbered in order (300 `train_step`s; the five commands of a
step, zero_grad, forward, loss, backward, step, each pass making its own tensors). A pass may use what an
earlier request made, never what an earlier pass made, and what the passes before the last one made must not
be used after them: after the loop the body's variables hold the last pass's objects (renamed to them).
"""
import re

from torchsh.history import forms

PERIOD_MAX = 10  # requests in a loop's body, at most
HANDLE = re.compile("\x00([^\x00]+)\x00")


def placeholder(handle):
    return "\x00%s\x00" % handle


def body(rows, w, pinned=()):
    """(script lines, {handle of the last pass: the handle named in the body}, handles of earlier passes) for
    [(lines before it, entry)]; `pinned` handles are used after everything (the checks' target)."""
    r = _rendered(rows, w)
    last = _last_uses(r)
    for h in pinned:
        last[h] = len(r)
    out, rename, hidden, i = [], {}, set(), 0
    while i < len(r):
        k, n = max(((k, _repeats(r, i, k, last)) for k in range(1, PERIOD_MAX + 1)),
                   key=lambda kn: (kn[0] * kn[1] if kn[1] > 1 else 0, -kn[0]))
        if n < 2:
            k, n = 1, 1
        lines = [line for _, ls, _ in r[i:i + k] for line in ls]
        out += r[i][0]
        if n > 1:
            first = {v: h for h, v in _numbered(r[i:i + k]).items()}
            rename.update((h, first[v]) for h, v in _numbered(r[i + (n - 1) * k:i + n * k]).items())
            hidden |= {h for _, _, outs in r[i:i + (n - 1) * k] for h in outs}
            lines = ["for _ in range(%d):" % n] + ["    " + line for line in lines]
        out += lines
        i += k * n
    return out, rename, hidden


def _rendered(rows, w):
    out = []
    for prefix, e in rows:
        lines = forms.lines(e, w)
        if e.grad:
            lines = ["with torch.%s():" % w.name(e.grad)] + ["    " + line for line in lines]
        out.append((prefix, lines, list(e.outputs)))
    return out


def _last_uses(r):
    last = {}
    for i, (_, lines, _) in enumerate(r):
        for line in lines:
            for h in HANDLE.findall(line):
                last[h] = i
    return last


def _numbered(units):
    """handle -> its number among those the units make, in order."""
    local = {}
    for _, _, outs in units:
        for h in outs:
            local.setdefault(h, len(local))
    return local


def _signature(units):
    local = _numbered(units)
    text = "\n".join(line for _, lines, _ in units for line in lines)
    return HANDLE.sub(lambda m: "\x01%d" % local[m.group(1)] if m.group(1) in local else m.group(0), text)


def _repeats(r, i, k, last):
    """How many passes of the k units at i repeat from there (1: none)."""
    if i + 2 * k > len(r):
        return 1
    first, n = _signature(r[i:i + k]), 1
    while i + (n + 1) * k <= len(r):
        nxt = r[i + n * k:i + (n + 1) * k]
        if any(prefix for prefix, _, _ in nxt) or _signature(nxt) != first:
            break
        n += 1
    for j in range(n - 1):  # what pass j makes must not be used after it (only the last pass's may be)
        end = i + (j + 1) * k
        if any(last.get(h, -1) >= end for _, _, outs in r[i + j * k:end] for h in outs):
            return j + 1
    return n
