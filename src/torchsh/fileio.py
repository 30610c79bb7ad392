"""Files the daemon reads and writes for a caller: atomic saves, and reads that cannot wedge or balloon.

One helper per concern, shared by every file the daemon writes (formats/ has the tensor files' readers and
writers, one row per extension):
- atomic_write: temp file beside the target, fsync'd, renamed into place, the folder fsync'd; the temp
  file is removed on every failure path (a full disk leaves no `.torchsh-*` file behind). The file gets
  the mode `>` would give it: a new one 0666 less the umask, one it replaces keeps its mode.
- regular_file: a load opens only regular files, so a FIFO nobody writes, /dev/zero or a terminal is
  refused at once instead of holding the tensor lock (and every other shell) forever.
- .npy headers are read before the data (a file's, an .npz member's, an HTTP body's): a header claiming more
  bytes than the file holds is refused before anything is allocated (a 40-byte file must not ask for 8 EiB).
Errors are file_error (bad_request for an HTTP body) with the path and the reason on one line.
"""
import io
import os
import stat
import tempfile
import tokenize

import numpy as np
from safetensors import SafetensorError

from torchsh.errors import TorchshError

# What numpy's .npy header reader raises on a damaged header (it falls back to Python's tokenizer).
HEADER_ERRORS = (ValueError, OSError, EOFError, SyntaxError, TypeError, MemoryError, tokenize.TokenError)
# What a writer raises when the disk is full, the folder read-only, or the data unsavable (bfloat16 to .npy).
WRITE_ERRORS = (OSError, ValueError, RuntimeError, TypeError, SafetensorError)

_KIND_OF_MODE = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                 (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def first_line(exc):
    return (str(exc).strip().split("\n")[0] or type(exc).__name__)[:300]


def file_error(path, verb, exc):
    if isinstance(exc, FileNotFoundError):
        return TorchshError("file_error", "no such file or folder: %s" % path)
    return TorchshError("file_error", "cannot %s %s: %s" % (verb, path, first_line(exc)))


# -- writing --------------------------------------------------------------------------------
def atomic_write(path, write):
    """Call write(tmp_path) on a temp file beside `path`, then make it `path` durably, or leave nothing.

    The temp name keeps the extension (np.save and friends look at it). WRITE_ERRORS from the
    writer become file_error; anything else propagates (a bug) after the temp file is removed.
    """
    folder = os.path.dirname(path) or "."
    suffix = os.path.splitext(path)[1]
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".torchsh-", suffix=suffix)
    except (OSError, ValueError) as e:  # missing or read-only folder, a file where the folder should be
        raise file_error(path, "write", e) from None
    os.close(fd)
    try:
        write(tmp)
        _seal(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, WRITE_ERRORS):
            raise file_error(path, "write", e) from None
        raise
    try:
        _fsync_path(folder, os.O_DIRECTORY)  # the rename itself survives a crash only once the folder is synced
    except OSError:
        pass  # some filesystems refuse fsync on folders; the file itself is already durable


def atomic_write_bytes(path, data):
    """atomic_write of DATA (bytes) as the whole file."""
    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)
    atomic_write(path, write)


def _mode_for(path):
    """What the saved file's mode would be had it been written in place: an existing regular file's own
    (a group-readable model stays group-readable when saved again), else 0666 less the umask (mkstemp
    makes its file 0600 whatever the umask)."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0o666 & ~umask()
    return stat.S_IMODE(st.st_mode) & 0o777 if stat.S_ISREG(st.st_mode) else 0o666 & ~umask()


def _seal(tmp, mode):
    """Give the temp file its mode and fsync it, through one descriptor that never follows a link (the
    writer had the name; the folder is the caller's)."""
    fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


_umask = []


def umask():
    """The daemon's umask, inherited from the shell that started it: read from /proc (os.umask() would
    have to set it to read it, for every thread at once); 0o077, the private choice, where /proc has none."""
    if not _umask:
        try:
            with open("/proc/self/status") as f:
                line = next((text for text in f if text.startswith("Umask:")), None)
            _umask.append(int(line.split()[1], 8) if line else 0o077)
        except OSError:
            _umask.append(0o077)
    return _umask[0]


def _fsync_path(path, flags=0):
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- reading --------------------------------------------------------------------------------
def regular_file(path):
    """os.stat_result of path if it is a regular file (symlinks followed), else file_error naming what it is."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:
        raise file_error(path, "read", e) from None
    if not stat.S_ISREG(st.st_mode):
        what = next((name for test, name in _KIND_OF_MODE if test(st.st_mode)), "not a regular file")
        raise TorchshError("file_error", "%s is %s, not a regular file" % (path, what),
                           "load reads regular files only (a FIFO or device could block the daemon forever)")
    return st


def check_npy_header(f, size, where, code="file_error"):
    """Read the .npy header at f's start; refuse it unless its data fits in the `size` bytes f holds.
    -> (shape, fortran_order, dtype, where the data begins).

    Leaves f at offset 0. Object arrays are refused too: their data is a pickle, never read here.
    """
    try:
        version = np.lib.format.read_magic(f)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(f)  # 3.0 (a UTF-8 header) reads as 2.0 for all but non-ASCII names
    except HEADER_ERRORS as e:
        raise TorchshError(code, "%s is not an .npy array: %s" % (where, first_line(e))) from None
    offset = f.tell()
    available = size - offset
    f.seek(0)
    if dtype.hasobject:
        raise TorchshError(code, "%s holds Python objects, which are never unpickled" % where,
                           "save numbers: np.save(f, array.astype(np.float32))")
    count = 1
    for n in shape:
        count *= n
    claimed = count * dtype.itemsize
    if claimed > available:
        raise TorchshError(code, "%s claims shape %s of %s (%d bytes) but holds only %d bytes of data"
                           % (where, list(shape)[:8], dtype, claimed, max(available, 0)),
                           "the file is truncated or corrupt; nothing was allocated")
    return shape, fortran, dtype, offset


def npy_from_bytes(data, where="the body", code="bad_request"):
    """An ndarray from .npy bytes (an HTTP body), on those bytes, not a copy: a bytearray (a big body,
    daemon/bodies.py) gives a writable array, which torch.from_numpy takes as it is (a 1 GiB upload was
    copied twice more on the tensor thread). Zip archives (.pt, .npz) and pickles are refused by name."""
    if data[:2] == b"PK":
        raise TorchshError(code, "%s is a zip archive (a .pt or .npz file), not an .npy array" % where,
                           "send one array saved with numpy.save; .pt files go through `torch load FILE`")
    head = io.BytesIO(bytes(data[:1 << 16]))  # numpy reads headers of 10,000 bytes at most
    shape, fortran, dtype, offset = check_npy_header(head, len(data), where, code)
    count = 1
    for n in shape:
        count *= n
    try:
        return np.frombuffer(data, dtype, count, offset).reshape(shape, order="F" if fortran else "C")
    except HEADER_ERRORS as e:  # a dtype of no size, say
        raise TorchshError(code, "%s is not a readable .npy array: %s" % (where, first_line(e))) from None


def read_array(f, where, code):
    """The array after a header check_npy_header passed: out_of_memory, or `code`, where it cannot be read."""
    try:
        return np.lib.format.read_array(f, allow_pickle=False)
    except MemoryError:
        raise TorchshError("out_of_memory", "%s does not fit in memory" % where,
                           "`torch tensors` lists what is held; `torch free` frees it") from None
    except HEADER_ERRORS as e:
        raise TorchshError(code, "%s is not a readable .npy array: %s" % (where, first_line(e))) from None
