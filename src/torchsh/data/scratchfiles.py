"""Files the daemon makes for a dataset it holds (a token file of `data tokenize`): in one private folder per
daemon process, removed with the dataset that owns them.

The folder is made by mkdtemp (0700, ours, a fresh name: nothing another user planted can be in it) under the
user's cache folder (cachefiles.folder(): ~/.cache/torchsh, on disk, where a token file of gigabytes belongs),
or the system's temp folder when that cache is off or cannot be made. A file is removed when the dataset that
owns it is freed (weakref.finalize), and the folder when the daemon ends; a daemon killed with -9 leaves its
folder behind (named torchd-data-*, safe to remove).
"""
import atexit
import os
import secrets
import shutil
import tempfile
import threading
import weakref

from torchsh import cachefiles, fileio

_lock = threading.Lock()
_folder = []


def folder():
    """This process's private folder, made on first use."""
    with _lock:
        if not _folder:
            _folder.append(_make())
            atexit.register(shutil.rmtree, _folder[0], True)
        return _folder[0]


def _make():
    base = cachefiles.folder()
    if base is not None:
        try:
            os.makedirs(base, mode=0o700, exist_ok=True)
            return tempfile.mkdtemp(prefix="torchd-data-", dir=base)
        except OSError:  # a read-only home: the temp folder serves as well, only smaller
            pass
    try:
        return tempfile.mkdtemp(prefix="torchd-data-")
    except OSError as e:
        raise fileio.file_error(tempfile.gettempdir(), "make a private folder in", e) from None


def new_path(suffix):
    """A fresh path in the private folder (nothing there yet), ending in SUFFIX."""
    return os.path.join(folder(), secrets.token_hex(8) + suffix)


def remove_when_freed(owner, *paths):
    """Remove PATHS once OWNER is garbage, in the process that made them only (a forked DataLoader worker holds
    a copy of the owner and must not remove the files its parent still reads)."""
    weakref.finalize(owner, _remove_in, os.getpid(), paths)


def _remove_in(pid, paths):
    if os.getpid() == pid:
        remove(*paths)


def remove(*paths):
    for path in paths:
        try:
            os.unlink(path)
        except OSError:  # removed already
            pass
