"""The caller's files on a remote context's daemon: staged copies in a private folder of the daemon's host.

A path in a command run on a named context is the CALLER's file (docs/remote.md). The daemon cannot open it,
so the client streams it: the CLI face answers "upload these" (protocol.H_UPLOAD) when a command names a
file the daemon has not been sent, the client POSTs each to /v1/files and repeats the command naming the
staged copies (TORCHSH_STAGED_i=ID:PATH), and the op reads the copy. A file the op writes goes to a fresh
staged path; the reply names it (protocol.H_DOWNLOAD) and the client GETs it into the caller's path,
atomically. Staged inputs go when the command ends, but a dataset's (`data …` maps its files), which stay
for the daemon's life; outputs go once fetched.
"""
import os
import secrets
import shutil
import tempfile
import threading

ENV_STAGED = "TORCHSH_STAGED_"   # TORCHSH_STAGED_<i>=<id>:<the caller's absolute path>
ENV_STREAMS = "TORCHSH_STREAMS_FILES"  # the client can upload and download (the standalone client does)
_ID_CHARS = frozenset("0123456789abcdef")


class Staging:
    """A 0700 folder (made on first use, removed at the daemon's end) of staged files named by random ids."""

    def __init__(self):
        self.folder = None
        self._lock = threading.Lock()

    def _dir(self):
        with self._lock:
            if self.folder is None:
                self.folder = tempfile.mkdtemp(prefix="torchd-staged-")  # 0700, ours
            return self.folder

    def new(self, caller_path):
        """(id, a fresh path under the folder that keeps the caller's file name, so its suffix says the format)."""
        stage_id = secrets.token_hex(8)
        sub = os.path.join(self._dir(), stage_id)
        os.mkdir(sub, 0o700)
        name = os.path.basename(caller_path.replace("\0", ""))
        return stage_id, os.path.join(sub, name if name not in ("", ".", "..") else "file")

    def path_of(self, stage_id):
        """The staged file of an id, or None (unknown, or already fetched)."""
        if not stage_id or not set(stage_id) <= _ID_CHARS or self.folder is None:
            return None
        sub = os.path.join(self.folder, stage_id)
        try:
            names = os.listdir(sub)
        except OSError:
            return None
        return os.path.join(sub, names[0]) if len(names) == 1 else None

    def remove(self, paths):
        for path in paths:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)

    def remove_ids(self, stage_ids):
        for stage_id in stage_ids:
            if self.folder is not None and set(stage_id) <= _ID_CHARS:
                shutil.rmtree(os.path.join(self.folder, stage_id), ignore_errors=True)

    def close(self):
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def staged_map(env):
    """{the caller's absolute path: stage id} from a request's TORCHSH_STAGED_i settings."""
    out = {}
    for key, value in env.items():
        if key.startswith(ENV_STAGED):
            stage_id, sep, path = value.partition(":")
            if sep:
                out[path] = stage_id
    return out
