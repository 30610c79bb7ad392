"""Shard patterns as bash expands them: `torch data open 'shards/*.parquet'` and 'train-{000..127}.tar' arrive
quoted (the shell left them alone), so the daemon expands them, relative to the caller's cwd.

Braces first, as bash does ({a,b}, {1..10}, {000..127} zero-padded to the wider end, {a..e}, a step
{0..10..5}; nested), then each word's globs (* ? [...]): a glob's matches sorted, hidden files only when the
pattern's part starts with a dot. A word that names a file outright (no glob) must exist; a glob that
matches nothing is refused by name, unless a file is named that very word (bash leaves such a word as it is).
"""
import glob
import os
import re

from torchsh.errors import TorchshError

_SEQUENCE = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")
_GLOB = re.compile(r"[*?[]")


def expand(patterns, cwd=None):
    """The files PATTERNS name, absolute, in bash's order; file_error naming a pattern or a file not there.
    A word without braces or globs passes as it is (its opener says what is wrong with it)."""
    files = []
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        pattern = os.path.join(cwd, pattern) if cwd else pattern
        words = braces(pattern)
        for word in words:
            files += _globbed(word, pattern) if len(words) > 1 or _GLOB.search(word) else [word]
    return [os.path.normpath(f) for f in files]


def _globbed(word, pattern):
    if not _GLOB.search(word):
        if not os.path.lexists(word):
            raise TorchshError("file_error", "no such file: %s (from %s)" % (word, pattern)
                               if word != pattern else "no such file: %s" % word, "check the shard names: `ls`")
        return [word]
    matches = sorted(glob.glob(word))
    if not matches and os.path.lexists(word):
        return [word]
    if not matches:
        raise TorchshError("file_error", "no file matches %s" % word, "check the pattern with `ls %s`" % word)
    return matches


def braces(word):
    """bash's brace expansion of one word: the words, in order (a word without braces is itself)."""
    start, end, parts = _first_braces(word)
    if start is None:
        return [word]
    head, tail = word[:start], word[end + 1:]
    return [w for part in parts for w in braces(head + part + tail)]


def _first_braces(word):
    """(start, end, alternatives) of the first {…} that expands (a comma list or a sequence); (None,)*3 if none."""
    for start, ch in enumerate(word):
        if ch != "{" or (start and word[start - 1] in "$\\"):
            continue
        end, commas, depth = None, [], 0
        for k in range(start, len(word)):
            depth += {"{": 1, "}": -1}.get(word[k], 0)
            if depth == 1 and word[k] == ",":
                commas.append(k)
            if depth == 0:
                end = k
                break
        if end is None:
            return None, None, None
        if commas:
            cuts = [start] + commas + [end]
            return start, end, [word[a + 1:b] for a, b in zip(cuts, cuts[1:])]
        sequence = _sequence(word[start + 1:end])
        if sequence is not None:
            return start, end, sequence
    return None, None, None


def _sequence(text):
    """{1..10}, {000..127} (zero-padded as bash pads: to the wider end when either starts with 0), {a..e},
    {0..10..5}: the words, or None when text is no sequence (bash leaves such braces as they are)."""
    m = _SEQUENCE.match(text)
    if m is None:
        return None
    first, last, step = m.group(1), m.group(2), abs(int(m.group(3) or 1)) or 1
    if first.isalpha() != last.isalpha():
        return None
    if first.isalpha():
        a, b = ord(first), ord(last)
        return [chr(c) for c in range(a, b + (1 if b >= a else -1), step if b >= a else -step)]
    a, b = int(first), int(last)
    numbers = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
    padded = any(re.match(r"^-?0\d", t) for t in (first, last))
    width = max(len(first), len(last)) if padded else 0
    return ["%0*d" % (width, n) for n in numbers]
