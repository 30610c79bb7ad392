"""Python's warnings (PyTorch's, a model's own) as the caller sees them: one line each, recorded while an op or
a job's work runs on the tensor thread, under the tensor lock.

Left to Python's defaults, a warning goes to the daemon's stderr (torchd.log), once per code location: the
loss warning of a fit's first batch would never reach the person who ran it. So while an op (call/invoke.py)
or a job's work (jobs/job.py) holds the tensor lock, the process-wide filters and showwarning are swapped for
"always" and a recorder. The swap is process-wide state: it is safe only under the tensor lock, where no
other swap can be; a warning another thread raises meanwhile (a lock-free verb) goes where it would have.

A job says each KIND of warning once, as a note on its followers' stderr (`torch: fit: warning: …`): the kind
is the category and the message's first line with its numbers blanked, so PyTorch's "Using a target size
(torch.Size([16]))…" of a full batch and of the last, shorter one are one kind. A kind the request that
started the job printed already (a model whose forward warns, in fit's probe of item 0) is not said again.
A run's log (train/logs/logdir.py) reads the kinds raised while it was open, each once per run (Reader).
"""
import re
import threading
import warnings

ALWAYS = ("always", None, Warning, None, 0)  # simplefilter("always")'s entry
# what catch_warnings calls on entry and exit (CPython 3.8-3.13), so a location's "already warned" mark no
# longer hides it; a Python without it only loses the "every time" of a repeated warning, never the daemon
filters_mutated = getattr(warnings, "_filters_mutated", lambda: None)
_TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)?\s*$")  # where in ATen's C++: noise to a user
_NUMBERS = re.compile(r"\d+")
_ON_THREAD = threading.local()  # .catch: the Catch swapped in on this thread


def first_line(message):
    """A warning's message as one line for the caller: its first line, without ATen's C++ location."""
    return _TRIGGERED.sub("", str(message).strip().split("\n")[0])


def kind_of(line):
    """What two warnings of one kind share: the line with its numbers blanked (sizes, counts)."""
    return _NUMBERS.sub("#", line)


def active():
    """The Catch swapped in on this thread now (a job's work is running here), or None."""
    return getattr(_ON_THREAD, "catch", None)


class Catch:
    """A job's warnings: swapped in (`with catch:`) while its work holds the tensor lock, out between its steps
    when other requests run. say(line) is called with the first line of each new kind; said: the lines the
    starting request printed already (call/invoke.py's list, filled by the time the work runs)."""

    def __init__(self, say, said=()):
        self.say, self.said = say, said
        self.latest = {}      # (category, kind) -> (serial, category, line) of its latest warning
        self.serial = 0       # warnings recorded so far
        self._saved = self._outer = self._thread = None

    def __enter__(self):
        self._saved, self._outer = (warnings.filters, warnings.showwarning), active()
        self._thread = threading.get_ident()
        warnings.filters = [ALWAYS]  # a fresh list: the work's own simplefilter() must not edit a shared one
        filters_mutated()
        warnings.showwarning = self._show
        _ON_THREAD.catch = self
        return self

    def __exit__(self, kind, value, tb):
        (warnings.filters, warnings.showwarning), self._saved = self._saved, None
        filters_mutated()
        _ON_THREAD.catch = self._outer

    def _show(self, message, category, filename, lineno, file=None, line=None):
        saved = self._saved
        if threading.get_ident() != self._thread:  # another thread's, raised while the swap was in
            if saved is not None:
                saved[1](message, category, filename, lineno, file, line)
            return
        text = first_line(message)
        if not text:
            return
        key = (category.__name__, kind_of(text))
        self.serial += 1
        if key not in self.latest and not any(kind_of(s) == key[1] for s in self.said):
            self.say(text)
        self.latest[key] = (self.serial, category.__name__, text)


class Reader:
    """The kinds of warning a job's work raised since this was made, each once: a run's log's (train/logs/logdir.py).
    Made on the work's thread; outside a job (no Catch there) it reads nothing."""

    def __init__(self, catch=None):
        self.catch = catch or active()
        self.at = self.catch.serial if self.catch is not None else 0
        self.kinds = set()

    def new(self):
        """[(category, line)] of the kinds raised since the last call and not read before, in order."""
        if self.catch is None or self.catch.serial == self.at:
            return []
        fresh = sorted((serial, key, category, line) for key, (serial, category, line) in self.catch.latest.items()
                       if serial > self.at and key not in self.kinds)
        self.at = self.catch.serial
        self.kinds.update(key for _, key, _, _ in fresh)
        return [(category, line) for _, _, category, line in fresh]
