"""Names: `@enc` -> the handle of the object it names now, and each name's short history (`@enc~1`).

A name is a word of letters, digits and `_ . - /` that does not start with `/` (`@exp1/enc`: `/` makes
namespaces). The leading `@` keeps names disjoint from handles: `nn://enc` parses as a stale handle,
`@enc` never does. Docker's rule on collisions: naming a second object `@enc` while `@enc` names a live one
is name_in_use; `force` moves the name, and its earlier targets stay reachable as `@enc~1`, `@enc~2`, …
(the newest REFLOG_KEPT). A name pins its object (and its reflog's): a scope's end moves it out instead of
freeing it (registry/store.py). A name given a TTL expires: the name goes, and its object with it unless
another name holds it (Registry.expire_names; lazily on lookup and listing, and once a second by the reaper).

Its own small lock; the registry calls in holding its lock (never the other way round).
"""
import difflib
import fnmatch
import re
import threading
import time
from dataclasses import dataclass, field

from torchsh.errors import TorchshError

NAME_RE = re.compile(r"^[A-Za-z0-9_.\-][A-Za-z0-9_.\-/]*$")
REFLOG_RE = re.compile(r"^(.*)~(\d+)$")
GLOB_CHARS = "*?["
MAX_NAME = 128
REFLOG_KEPT = 8    # earlier targets remembered per name (`@enc~1` … `@enc~8`)
MAX_NAMES = 100_000


@dataclass
class Name:
    handle: str
    created: float
    expires: float = None                        # time.time() when the name (and its object) goes, or None
    reflog: list = field(default_factory=list)   # earlier targets, newest first


def check_name(text):
    """The name in `@NAME` (or NAME), valid, without its `@`; bad_argument otherwise."""
    name = text.strip()
    name = name[1:] if name.startswith("@") else name
    if not name or len(name) > MAX_NAME or not NAME_RE.match(name) or "//" in name or name.endswith("/"):
        raise TorchshError("bad_argument", "%r is not a name" % text[:60],
                           "a name is letters, digits and _ . - / (not first, not last), e.g. @exp1/enc")
    return name


def is_pattern(text):
    return any(c in text for c in GLOB_CHARS)


def parse_ttl(text):
    """`30m`, `2h`, `1d`, `45s` or `45` (seconds) -> seconds (> 0); bad_argument otherwise."""
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", str(text))
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)] if m else 0
    if seconds <= 0:
        raise TorchshError("bad_argument", "--ttl %r is not a duration" % str(text)[:30],
                           "a positive number of seconds, or with a unit: 45s, 30m, 2h, 1d")
    return seconds


class Names:
    def __init__(self):
        self._names = {}   # name (no @) -> Name
        self._lock = threading.Lock()

    def lookup(self, text):
        """The handle `@name` or `@name~N` names now, or None (unknown, expired, a pattern, not a name)."""
        name, back = _split(text)
        entry = self._names.get(name)
        if entry is None or (entry.expires is not None and entry.expires <= time.time()):
            return None
        if back == 0:
            return entry.handle
        return entry.reflog[back - 1] if back <= len(entry.reflog) else None

    def resolve(self, text):
        """The handle `@name` or `@name~N` names now; unknown_name when none."""
        handle = self.lookup(text)
        if handle is None:
            raise self.missing(text)
        return handle

    def missing(self, text):
        """The error for a `@name` that names nothing: unknown_name, with the closest names."""
        name, back = _split(text)
        if is_pattern(name):
            return TorchshError("bad_argument", "@%s is a pattern; only `torch free` and `torch names` take one" % name,
                                "name one object here")
        entry = self._names.get(name)
        if entry is not None and back:
            return TorchshError("unknown_name", "@%s has %d earlier target(s), not %d" % (name, len(entry.reflog), back),
                                "`torch names @%s --json` lists them" % name)
        close = difflib.get_close_matches(name, list(self._names), n=3)
        return TorchshError("unknown_name", "no object is named @%s" % name,
                            ("did you mean %s? " % " ".join("@" + c for c in close) if close else "")
                            + "`torch names` lists the names")

    def holder(self, name):
        """The handle `name` names now (expired or not), or None."""
        entry = self._names.get(name)
        return entry.handle if entry else None

    def set(self, name, handle, force=False, ttl=None):
        """Name `handle` `name`: name_in_use when it names another object (unless force, which moves it)."""
        with self._lock:
            entry = self._names.get(name)
            if entry is not None and entry.handle != handle:
                if not force:
                    raise in_use(name, entry.handle)
                entry.reflog = ([entry.handle] + [h for h in entry.reflog if h != handle])[:REFLOG_KEPT]
                entry.handle, entry.created = handle, time.time()
            elif entry is None:
                if len(self._names) >= MAX_NAMES:
                    raise TorchshError("too_large", "%d names are held, the limit" % MAX_NAMES, "free some")
                entry = self._names[name] = Name(handle, time.time())
            entry.expires = time.time() + ttl if ttl else None

    def forget(self, handles):
        """Drop the names whose object is gone (freed); their reflogs with them."""
        gone = set(handles)
        with self._lock:
            for name in [n for n, e in self._names.items() if e.handle in gone]:
                del self._names[name]

    def drop(self, names):
        with self._lock:
            for name in names:
                self._names.pop(name, None)

    def clear(self):
        with self._lock:
            self._names.clear()

    def pinned(self):
        """Every handle a name or a reflog holds: a scope's end does not free these."""
        with self._lock:
            return {h for e in self._names.values() for h in [e.handle] + e.reflog}

    def expired(self):
        """Drop the names whose TTL ran out; -> the handles they named."""
        now = time.time()
        with self._lock:
            done = [(n, e.handle) for n, e in self._names.items() if e.expires is not None and e.expires <= now]
            for name, _ in done:
                del self._names[name]
        return [h for _, h in done]

    def matching(self, pattern=None):
        """[(name, Name)] sorted, those matching the fnmatch pattern (with or without its `@`) when given."""
        with self._lock:
            items = sorted(self._names.items())
        if pattern is None:
            return items
        pattern = pattern.strip()
        pattern = pattern[1:] if pattern.startswith("@") else pattern
        return [(n, e) for n, e in items if fnmatch.fnmatchcase(n, pattern)]

    def of(self, handle):
        """The names of one object, sorted."""
        return sorted(n for n, e in list(self._names.items()) if e.handle == handle)

    def records(self):
        """[[name, handle, seconds left or None, reflog]]: what a session save writes."""
        now = time.time()
        return [[n, e.handle, None if e.expires is None else max(e.expires - now, 0.001), list(e.reflog)]
                for n, e in self.matching()]

    def restore(self, records, held):
        """Names back from a session save, those whose handle `held(handle)` says is held (a name held here
        already stays as it is)."""
        with self._lock:
            for name, handle, left, reflog in records:
                if held(handle) and name not in self._names:
                    self._names[name] = Name(handle, time.time(), time.time() + left if left else None,
                                             [h for h in reflog if held(h)][:REFLOG_KEPT])


def in_use(name, holder):
    return TorchshError("name_in_use", "@%s already names %s" % (name, holder),
                        "--force moves the name (the old object stays reachable as @%s~1); "
                        "or `torch free @%s` first" % (name, name))


def say_given(err, words, app):
    """A wrong_kind error about an object the caller gave as a `@name` (one of `words`: argv and stdin words,
    or a JSON body's args, nested) names the name too: `@w (tensor://…) is a tensor, but a module is …`.
    (app: the daemon's, whose registry holds the names; the help-only app has none, nor wrong_kind errors.)"""
    if err.code != "wrong_kind":
        return
    lookup = app.registry.names.lookup
    stack = list(words)
    while stack:
        w = stack.pop(0)
        if isinstance(w, (list, tuple, dict)):
            stack.extend(w.values() if isinstance(w, dict) else w)
        elif isinstance(w, str) and w.strip()[:1] == "@":
            handle = lookup(w.strip())
            if handle and err.message.startswith(handle + " is "):
                err.message = "%s (%s)%s" % (w.strip(), handle, err.message[len(handle):])
                return


def _split(text):
    """`@enc~2` -> ("enc", 2)."""
    name = text.strip()
    name = name[1:] if name.startswith("@") else name
    m = REFLOG_RE.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, 0)
