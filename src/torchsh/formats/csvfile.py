""".csv files as tensors: `torch load x.csv`, `data open x.csv`, `torch save T x.csv`, `torch value --format csv`.

A CSV is read twice at most: numpy's C reader first (60,000 x 10 in ~0.1 s), and only when it refuses
the file the csv module, which reads empty cells as NaN and otherwise names the exact cell at fault.
Lines that start with `#` are comments; fields may be quoted ("1.5"); a UTF-8 byte order mark is skipped.
Errors are file_error with the path, line and column.
"""
import csv
import math

import numpy as np
import torch

from torchsh.errors import TorchshError, bad_argument
from torchsh.fileio import file_error, regular_file
from torchsh.text import tensortext


def read(path, groups=None, dtype=None, header=None, delimiter=",", squeeze=True):
    """[Tensor] of a CSV, one per column group (groups None: every column, one tensor): parsed as int64 for
    integer dtypes, else float64, then cast to dtype (float32 when None). squeeze=False keeps every group
    2-D, one column too (pandas' df[['x']])."""
    dtype = dtype or torch.float32
    integer = not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
    return [torch.from_numpy(a).to(dtype) for a in load_csv(path, groups, header, delimiter, integer, squeeze)]


def write(path, named):
    with open(path, "w") as f:
        f.write(text(next(iter(named.values()))))


def text(t):
    """One line per row, values as `torch value --nan bare` prints them; a 1-D tensor is one column (as
    pandas writes a Series), which `torch load` reads back 1-D."""
    t = t.detach()
    if t.dim() > 2:
        raise bad_argument("csv holds at most 2 dimensions, this tensor has %d" % t.dim(), "use json, npy or npz")
    rows = t.reshape(-1, 1) if t.dim() == 1 else t.reshape(1, -1) if t.dim() == 0 else t
    return "".join(",".join(tensortext.float_texts(r, bare=True)) + "\n" for r in rows)


def load_csv(path, groups=None, header=None, delimiter=",", integer=False, squeeze=True):
    """[ndarray] of a CSV's numbers, one per column group (all columns, one array, when groups is None).

    groups: lists of column names or 0-based indices (as text or int). header: True, False, or None to
    detect one (every non-empty cell of the first record is text). integer: parse int64, else float64.
    Each array is shaped as numpy.loadtxt(ndmin=1) shapes it: one column (or one row) gives 1-D; with
    squeeze=False every array is rows × its columns (`data open`: one row per item).
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
    shape = _loadtxt_shape if squeeze else np.ascontiguousarray
    if not index_groups:
        return [shape(table)]
    where = {c: k for k, c in enumerate(usecols)}
    return [shape(table[:, [where[i] for i in g]]) for g in index_groups]


def columns(path, header=None, delimiter=","):
    """(column names or None, column count) of a CSV: `data open` resolves its flags' columns with them."""
    first, names, _ = _header(path, header, delimiter)
    return names, len(first)


def column_indices(group, names, width, path):
    """0-based column indices for a group of names or indices; bad_argument naming what the file has."""
    return _column_indices(group, names, width, path)


def text_column(path, index, header=None, delimiter=","):
    """(cells, lines): one column's cells as stripped text, one per data row (a label or category column),
    and the file's line number of each."""
    _, _, skip = _header(path, header, delimiter)
    cells, lines = [], []
    for line, record in _data_records(path, delimiter, skip):
        if len(record) <= index:
            raise TorchshError("file_error", "%s line %d has %d cells, expected at least %d"
                               % (path, line, len(record), index + 1), "every row needs the same number of cells")
        cells.append(record[index].strip())
        lines.append(line)
    return cells, lines


def _data_records(path, delimiter, skip):
    """(line number, record) of each data row: after the first `skip` lines, blank lines and comments left out."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, delimiter=delimiter)
        for record in reader:
            if reader.line_num > skip and record and not record[0].lstrip().startswith("#"):
                yield reader.line_num, record


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
    for line, record in _data_records(path, delimiter, skip):
        if len(record) <= usecols[-1] or (exact and len(record) != len(usecols)):
            raise TorchshError("file_error", "%s line %d has %d cells, expected %s" % (
                path, line, len(record), len(usecols) if exact else "at least %d" % (usecols[-1] + 1)),
                "every row needs the same number of cells (--delimiter if they are not split by %r)" % delimiter)
        row = []
        for i in usecols:
            cell = record[i].strip()
            try:
                row.append(parse(cell) if cell or integer else math.nan)
            except ValueError:
                raise bad_cell(path, line, len(rows) + 1, i, names, record[i], integer) from None
        rows.append(row)
    return np.array(rows, dtype=np.int64 if integer else np.float64).reshape(-1, len(usecols))


def cell_place(path, line, row, column, names):
    """Where a cell is, in words: `t.csv row 7 (line 8), column 1 (petal)`."""
    return "%s row %d (line %d), column %d%s" % (path, row, line, column,
                                                 " (%s)" % names[column] if names and names[column] else "")


def bad_cell(path, line, row, column, names, text, integer):
    """file_error naming the cell that is no number (or no integer) by row, line and column."""
    where = cell_place(path, line, row, column, names)
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
