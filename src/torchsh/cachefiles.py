"""Files torchsh keeps to skip work it can always redo, in the user's cache folder: the op table's PyTorch half
(table/cache.py) and the overview `torch` prints (cli/help.overview), so that `torch` with no daemon prints it
without importing PyTorch (cli/offline_help.py). Imports no torch.

The overview's file is named by what its text comes from, found without importing anything: torchsh's version,
Python's, PyTorch's (its version.py, read as a file) and the size and time of every torchsh source file (its
verbs' docstrings). A change to any of them names another file; a missing or unreadable one is written again
by the next process that builds the table (the daemon at its start, or help without a daemon).
"""
import hashlib
import importlib.util
import os
import sys

from torchsh import __version__

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def folder(env=os.environ):
    """$TORCHSH_TABLE_CACHE (off: none), else $XDG_CACHE_HOME/torchsh, else ~/.cache/torchsh."""
    setting = env.get("TORCHSH_TABLE_CACHE", "")
    if setting.lower() in ("off", "0", "no", "false"):
        return None
    if setting:
        return setting
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torchsh")


def overview_path():
    """Where the overview of this torchsh, Python and PyTorch is kept (None: the cache is off)."""
    where = folder()
    return os.path.join(where, "overview-%s.txt" % _sources_key()) if where else None


def read_overview():
    """The kept overview's text, or None."""
    path = overview_path()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() or None
    except (OSError, TypeError, UnicodeDecodeError):  # none kept (TypeError: the cache is off)
        return None


def keep_overview(text):
    """Keep the overview for the next `torch` without a daemon (written whole or not at all)."""
    path = overview_path()
    if path is None or read_overview() == text:
        return
    import tempfile  # only here: the reader's path (`torch` alone) must not pay for it
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".overview-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:  # a read-only home: help is built each time, as without the cache
        pass


def _sources_key():
    digest = hashlib.sha256(("%s|%s" % (__version__, sys.version)).encode())
    try:  # find_spec finds the package without importing it
        with open(os.path.join(importlib.util.find_spec("torch").submodule_search_locations[0], "version.py"),
                  "rb") as f:
            digest.update(f.read())
    except (OSError, AttributeError, TypeError, IndexError):  # no torch, or an odd one: a key all the same
        digest.update(b"torch?")
    for root, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:  # removed meanwhile
                continue
            digest.update(("%s/%s %d %d\n" % (root, name, st.st_size, st.st_mtime_ns)).encode())
    return digest.hexdigest()[:20]
