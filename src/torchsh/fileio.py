"""Files the daemon reads and writes for a caller: atomic saves, and reads that cannot wedge or balloon.

One helper per concern, shared by `save`/`load`, `nn save`/`nn load` and `checkpoint save`/`load`:
- atomic_write: temp file beside the target, fsync'd, renamed into place, the folder fsync'd; the temp
  file is removed on every failure path (a full disk leaves no `.torchsh-*` file behind).
- regular_file: a load opens only regular files, so a FIFO nobody writes, /dev/zero or a terminal is
  refused at once instead of holding the tensor lock (and every other shell) forever.
- .npy headers are read before the data: a header claiming more bytes than the file holds is refused
  before anything is allocated (a 40-byte file must not ask for 8 EiB).
Errors are file_error (bad_request for an HTTP body) with the path and the reason on one line.
"""
import csv
import io
import lzma
import math
import os
import stat
import tempfile
import tokenize
import zipfile
import zlib

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
        _fsync_path(tmp)
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

    Leaves f at offset 0. Object arrays are refused too: their data is a pickle, never read here.
    """
    try:
        version = np.lib.format.read_magic(f)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(f)  # 3.0 (a UTF-8 header) reads as 2.0 for everything but non-ASCII names
    except HEADER_ERRORS as e:
        raise TorchshError(code, "%s is not an .npy array: %s" % (where, first_line(e))) from None
    available = size - f.tell()
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


def npy_from_bytes(data, where="the body", code="bad_request"):
    """An ndarray from .npy bytes (an HTTP body); zip archives (.pt, .npz) and pickles are refused by name."""
    if data[:2] == b"PK":
        raise TorchshError(code, "%s is a zip archive (a .pt or .npz file), not an .npy array" % where,
                           "send one array saved with numpy.save; .pt files go through `torch load FILE`")
    f = io.BytesIO(data)
    check_npy_header(f, len(data), where, code)
    return _read_array(f, where, code)


def load_npy(path):
    regular_file(path)
    try:
        with open(path, "rb") as f:
            check_npy_header(f, os.fstat(f.fileno()).st_size, path)
            return _read_array(f, path, "file_error")
    except OSError as e:
        raise file_error(path, "read", e) from None


def load_npz(path):
    """{name: ndarray} from an .npz, each member's header checked against its stored (uncompressed) size first."""
    regular_file(path)
    out = {}
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                where = "%s member %s" % (path, info.filename)
                with z.open(info) as m:
                    head = io.BytesIO(m.read(1 << 16))  # a header is at most a few KiB
                check_npy_header(head, info.file_size, where)
                with z.open(info) as m:
                    out[name] = _read_array(m, where, "file_error")
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError,
            RuntimeError, zlib.error, lzma.LZMAError) as e:  # a damaged member fails while it is decompressed
        raise file_error(path, "read", e) from None
    return out


def _read_array(f, where, code):
    try:
        return np.lib.format.read_array(f, allow_pickle=False)
    except MemoryError:
        raise TorchshError("out_of_memory", "%s does not fit in memory" % where,
                           "`torch tensors` lists what is held; `torch free` frees it") from None
    except HEADER_ERRORS as e:
        raise TorchshError(code, "%s is not a readable .npy array: %s" % (where, first_line(e))) from None


# -- CSV ------------------------------------------------------------------------------------
# A CSV is read twice at most: numpy's C reader first (60,000 x 10 in ~0.1 s), and only when it refuses
# the file the csv module, which reads empty cells as NaN and otherwise names the exact cell at fault.
# Lines that start with `#` are comments; fields may be quoted ("1.5"); a UTF-8 byte order mark is skipped.
def load_csv(path, groups=None, header=None, delimiter=",", integer=False):
    """[ndarray] of a CSV's numbers, one per column group (all columns, one array, when groups is None).

    groups: lists of column names or 0-based indices (as text or int). header: True, False, or None to
    detect one (every non-empty cell of the first record is text). integer: parse int64, else float64.
    Each array is shaped as numpy.loadtxt(ndmin=1) shapes it: one column (or one row) gives 1-D.
    """
    first, names, lines_before_data = _header(path, header, delimiter)
    index_groups = [_column_indices(g, names, len(first), path) for g in groups] if groups else None
    usecols = sorted({i for g in index_groups for i in g}) if index_groups else list(range(len(first)))
    try:
        table = np.loadtxt(path, delimiter=delimiter, skiprows=lines_before_data, usecols=usecols, ndmin=2,
                           dtype=np.int64 if integer else np.float64, comments="#", quotechar='"',
                           encoding="utf-8-sig")
    except ValueError:  # a text or empty cell, a ragged row: find it (or read the empties as NaN)
        table = _read_cells(path, delimiter, lines_before_data, usecols, integer, names, exact=not groups)
    table = table.reshape(-1, len(usecols))
    if not index_groups:
        return [_loadtxt_shape(table)]
    where = {c: k for k, c in enumerate(usecols)}
    return [_loadtxt_shape(table[:, [where[i] for i in g]]) for g in index_groups]


def csv_columns_except(path, excluded, header=None, delimiter=","):
    """0-based indices of a CSV's columns but `excluded` (names or indices): `data open t.csv --target y`."""
    first, names, _ = _header(path, header, delimiter)
    dropped = set(_column_indices(excluded, names, len(first), path))
    return [i for i in range(len(first)) if i not in dropped]


def _header(path, header, delimiter):
    """(first record, column names or None, lines before the data) of a CSV; header None: detect one."""
    regular_file(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            first, lines_before_data = _first_record(csv.reader(f, delimiter=delimiter))
    except csv.Error as e:
        raise file_error(path, "read", e) from None
    if first is None:
        raise TorchshError("file_error", "%s holds no rows" % path)
    named = header if header is not None else _looks_like_header(first)
    return (first, [c.strip() for c in first], lines_before_data) if named else (first, None, 0)


def _first_record(reader):
    """The first record that is not blank or a comment, and how many lines it and those before it span."""
    for record in reader:
        if record and not record[0].lstrip().startswith("#"):
            return record, reader.line_num
    return None, 0


def _looks_like_header(record):
    cells = [c.strip() for c in record]
    return any(cells) and not any(_is_number(c) for c in cells if c)


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _column_indices(group, names, width, path):
    """0-based column indices for a group of names or indices; bad_argument naming what the file has."""
    out = []
    for item in group:
        text = str(item).strip()
        if names is not None and text in names:
            out.append(names.index(text))
        elif text.lstrip("-").isdigit() and -width <= int(text) < width:
            out.append(int(text) % width)
        else:
            have = ("columns %s" % ", ".join(names)) if names else "no header row"
            raise TorchshError("bad_argument", "%s has no column %r (%d columns, %s)" % (path, text, width, have),
                               "name a column of the header or give a 0-based index below %d" % width)
    return out


def _read_cells(path, delimiter, skip, usecols, integer, names, exact):
    """The cells of usecols as an array, empty ones NaN; file_error at the first cell that is no number."""
    parse = int if integer else float
    rows = []
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, delimiter=delimiter)
        for record in reader:
            if reader.line_num <= skip or not record or record[0].lstrip().startswith("#"):
                continue
            if len(record) <= usecols[-1] or (exact and len(record) != len(usecols)):
                raise TorchshError("file_error", "%s line %d has %d cells, expected %s" % (
                    path, reader.line_num, len(record), len(usecols) if exact else "at least %d" % (usecols[-1] + 1)),
                    "every row needs the same number of cells (--delimiter if they are not split by %r)" % delimiter)
            row = []
            for i in usecols:
                cell = record[i].strip()
                try:
                    row.append(parse(cell) if cell or integer else math.nan)
                except ValueError:
                    raise _bad_cell(path, reader.line_num, len(rows) + 1, i, names, record[i], integer) from None
            rows.append(row)
    return np.array(rows, dtype=np.int64 if integer else np.float64).reshape(-1, len(usecols))


def _bad_cell(path, line, row, column, names, text, integer):
    where = "%s row %d (line %d), column %d%s" % (path, row, line, column,
                                                  " (%s)" % names[column] if names and names[column] else "")
    if integer and not text.strip():
        return TorchshError("file_error", "%s is empty" % where, "an integer dtype has no NaN for empty cells; load as float")
    hint = "pick numeric columns with --columns"
    if row == 1 and names is None:
        hint = "--header if the first line names the columns; " + hint
    shown = text if len(text) <= 40 else text[:40] + "…"
    return TorchshError("file_error", "%s: %r is not %s" % (where, shown, "an integer" if integer else "a number"), hint)


def _loadtxt_shape(table):
    """numpy.loadtxt(ndmin=1)'s shape: size-1 axes squeezed, at least 1-D."""
    return np.atleast_1d(np.squeeze(table)).copy()
