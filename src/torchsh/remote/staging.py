"""The caller's files on a remote context's daemon: staged copies in a private folder of the daemon's host.

A path in a command run on a named context is the CALLER's file (docs/remote.md). The daemon cannot open it,
so the client streams it: the CLI face answers "upload these" (protocol.H_UPLOAD) when a command names a
file the daemon has not been sent, the client POSTs each to /v1/files and repeats the command naming the
staged copies (TORCHSH_STAGED_i=ID:PATH), and the op reads the copy. A file the op writes goes to a fresh
staged path; the reply names it (protocol.H_DOWNLOAD) and the client GETs it into the caller's path,
atomically. Staged inputs go when the command ends, but a dataset's (`data …` maps its files), which stay
for the daemon's life; outputs go once fetched.

A folder is staged the same way, as one id: the client POSTs each file at its relative path inside it
(checked here: it stays inside), and a folder the op wrote is fetched by GETting its id, which answers
the list of its files, each moved under an id of its own (then fetched like any file). A folder the op
both reads and writes (`fit --log DIR --resume auto`) sends back only the files new or changed since they
were received (size, mtime and inode compared with what was written here).

A staged file that waits on a client (uploaded and not yet read by a command, or written for the caller and
not yet fetched) is removed once it has waited STALE_S: its client went away between the two steps. One that
a command holds (a dataset's file, a run's --log folder) never waits on a client, so it is never swept.
"""
import contextlib
import os
import secrets
import shutil
import stat
import tempfile
import threading
import time

from torchsh import protocol

ENV_STAGED = "TORCHSH_STAGED_"   # TORCHSH_STAGED_<i>=<id>:<the caller's absolute path>
FOLDER_MARK, MAY_BE_MISSING = protocol.STAGED_FOLDER, protocol.STAGED_MAY_BE_MISSING  # the client reads them too
_ID_CHARS = frozenset("0123456789abcdef")
STALE_S = 3600.0  # a staged file that waited on its client this long is a leftover (see above)


class Staging:
    """A 0700 folder (made on first use, removed at the daemon's end) of staged files named by random ids."""

    def __init__(self):
        self.folder = None
        self._lock = threading.Lock()
        self._received = {}  # a staged folder's path -> {relative path: (size, mtime_ns, inode)} as written
        self._waiting = {}   # an id's folder -> when it began to wait on a client (time.monotonic)

    def _dir(self):
        with self._lock:
            if self.folder is None:
                self.folder = tempfile.mkdtemp(prefix="torchd-staged-")  # 0700, ours
            return self.folder

    def new(self, caller_path):
        """(id, a fresh path under the folder that keeps the caller's file name, so its suffix says the format)."""
        self.sweep()
        stage_id = secrets.token_hex(8)
        sub = os.path.join(self._dir(), stage_id)
        os.mkdir(sub, 0o700)
        name = os.path.basename(caller_path.replace("\0", ""))
        return stage_id, os.path.join(sub, name if name not in ("", ".", "..") else "file")

    def new_folder(self, caller_path):
        """(id, a fresh empty 0700 folder under the folder, named like the caller's)."""
        stage_id, path = self.new(caller_path)
        os.mkdir(path, 0o700)
        return stage_id, path

    def inside(self, stage_id, relative):
        """Where a file at RELATIVE goes inside staged folder ID (its parent folders made 0700), or None when
        ID is no staged folder or RELATIVE is no plain relative path: an empty, `.` or `..` part, a leading
        slash or a NUL. Nothing from a client may land outside the folder it names."""
        root = self.path_of(stage_id)
        parts = relative.split("/")
        if root is None or not os.path.isdir(root) or "\0" in relative or not relative or \
                any(part in ("", ".", "..") for part in parts):
            return None
        parent = root
        for part in parts[:-1]:
            parent = os.path.join(parent, part)
            if os.path.islink(parent):
                return None
            if not os.path.isdir(parent):
                os.mkdir(parent, 0o700)  # FileExistsError (a file there) is the caller's OSError
        return os.path.join(parent, parts[-1])

    def received(self, stage_id, relative, path):
        """Note a file as written from the client (a read-write folder sends back only what changed)."""
        st = os.lstat(path)
        self._received.setdefault(self.path_of(stage_id), {})[relative] = (st.st_size, st.st_mtime_ns, st.st_ino)

    def unpack(self, stage_id):
        """A staged folder's files, each moved under an id of its own, as [(id, relative path)], its
        sub-folders as ("", relative path); the folder goes. Only regular files and folders, never a link
        followed; a file received from the client and unchanged since is left out. None: no staged folder."""
        root = self.path_of(stage_id)
        if root is None or not os.path.isdir(root) or os.path.islink(root):
            return None
        seen = self._received.pop(root, {})
        out = []
        for top, dirs, files in os.walk(root):
            rel_top = os.path.relpath(top, root)
            for name in sorted(dirs):
                if not os.path.islink(os.path.join(top, name)):  # os.walk lists a link to a folder here
                    out.append(("", os.path.normpath(os.path.join(rel_top, name))))
            for name in sorted(files):
                rel, path = os.path.normpath(os.path.join(rel_top, name)), os.path.join(top, name)
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode) and seen.get(rel) != (st.st_size, st.st_mtime_ns, st.st_ino):
                    file_id, target = self.new(name)
                    os.rename(path, target)
                    out.append((file_id, rel))
        shutil.rmtree(os.path.dirname(root), ignore_errors=True)
        self.waiting(file_id for file_id, _ in out if file_id)
        return out

    def waiting(self, stage_ids):
        """These ids now wait on the client: uploaded for a command to come, or written for it to fetch."""
        now = time.monotonic()
        with self._lock:
            for stage_id in stage_ids:
                stage_id = stage_id.removeprefix(FOLDER_MARK)
                if self.folder is not None and stage_id and set(stage_id) <= _ID_CHARS:
                    self._waiting[os.path.join(self.folder, stage_id)] = now

    def taken(self, stage_id):
        """A command reads this id: it is the command's now (removed after it, or kept by what it made)."""
        if self.folder is not None and stage_id:
            with self._lock:
                self._waiting.pop(os.path.join(self.folder, stage_id.removeprefix(FOLDER_MARK)), None)

    def sweep(self, now=None):
        """Remove what waited on a client for STALE_S, and forget what went meanwhile (fetched, removed)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            gone = [d for d, since in self._waiting.items() if now - since >= STALE_S or not os.path.isdir(d)]
            for d in gone:
                del self._waiting[d]
        for d in gone:
            for path in [p for p in list(self._received) if os.path.dirname(p) == d]:  # list(): one step
                self._received.pop(path, None)
            shutil.rmtree(d, ignore_errors=True)

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
            self._received.pop(path, None)
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)

    def remove_ids(self, stage_ids):
        for stage_id in stage_ids:
            stage_id = stage_id.removeprefix(FOLDER_MARK)
            if self.folder is not None and stage_id and set(stage_id) <= _ID_CHARS:
                self._received.pop(self.path_of(stage_id), None)
                shutil.rmtree(os.path.join(self.folder, stage_id), ignore_errors=True)

    def close(self):
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def command_files(ctx, op):
    """Around one CLI command, the caller's staged files: a command's staged inputs are read by its end, but a
    dataset's (`data …` maps its files), which stay unless the command failed; outputs wait to be fetched,
    or go with a failed command. When a file is still to come (NeedUpload), those staged so far serve the next
    round and its outputs are made anew (any reply asked before anything ran: the command comes again)."""
    from torchsh.results import Ask
    try:
        yield
    except Ask:
        sent = set(staged_map(ctx.env).values())
        ctx.app.staging.remove_ids(i for i, _ in ctx.downloads if i.lstrip(FOLDER_MARK) not in sent)
        ctx.app.staging.waiting(sent)
        raise
    except BaseException:
        if ctx.uploads:
            ctx.app.staging.remove(ctx.uploads)
        ctx.app.staging.remove_ids(stage_id for stage_id, _ in ctx.downloads)  # a failed op's outputs: none
        raise
    if ctx.uploads and not op.name.startswith("data."):
        ctx.app.staging.remove(ctx.uploads)
    if ctx.downloads:
        ctx.app.staging.waiting(stage_id for stage_id, _ in ctx.downloads)


def staged_map(env):
    """{the caller's absolute path: stage id} from a request's TORCHSH_STAGED_i settings."""
    out = {}
    for key, value in env.items():
        if key.startswith(ENV_STAGED):
            stage_id, sep, path = value.partition(":")
            if sep:
                out[path] = stage_id
    return out


def as_callers(staged, downloads, text):
    """TEXT with the staged paths of DOWNLOADS written as the caller's (`saved 3 objects to DIR`, `plot --png`
    print where they wrote: the caller's path is where it will be)."""
    for stage_id, caller_path in downloads:
        path = staged.path_of(stage_id.removeprefix(FOLDER_MARK))
        if path is not None and text:
            text = text.replace(path, caller_path)
    return text
