"""Rows of named values (a table: `torch predict`'s) as a file chosen by extension, or as text on stdout.

.csv      a header line, then one line per row (Python's csv module, as pandas' to_csv(index=False) writes)
.jsonl    one JSON object per line (pandas' to_json(orient="records", lines=True))
.parquet  one column per name, through pyarrow (the `parquet` extra)
stdout    tab-separated with a header line (cut, join, paste, awk -F'\\t'); JSON rows under --json

Numbers in text (csv, stdout) are written as their dtype's shortest round-trip text (float32 0.1 as 0.1),
which reads back as the same float32; jsonl and parquet hold the values exactly as float64.
Files are written atomically (fileio.atomic_write) and replace an existing file, as `torch save` does.
"""
import csv
import json
import math
import os
from json.encoder import encode_basestring_ascii

import numpy as np

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument

EXTENSIONS = (".csv", ".jsonl", ".parquet")


class Rows:
    """A table held column by column (values[j] is column j's, one value per row): JSON rows ({column:
    value}, wire_form()) under --json, through the API and in Nushell; tab-separated text with a header on a
    terminal. Every file and the text are written from the columns, never a dict per row."""

    def __init__(self, columns, values, float32=True):
        self.columns, self.values, self.float32 = list(columns), [list(v) for v in values], float32
        if len(self.values) != len(self.columns) or len({len(v) for v in self.values}) > 1:
            raise ValueError("Rows needs one list of values per column, all of one length")

    def __len__(self):
        return len(self.values[0]) if self.values else 0

    def wire_form(self):
        """The JSON form: one {column: value} per row, a complex value as [real, imag] (as to_wire writes it)."""
        values = [[[v.real, v.imag] for v in c] if complex in set(map(type, c)) else c for c in self.values]
        return [dict(zip(self.columns, row)) for row in zip(*values)]

    def text(self):
        lines = ["\t".join(self.columns)] + list(map("\t".join, zip(*self.cells())))
        return "\n".join(lines) + "\n"

    def cells(self):
        """Each column's values as the text of a cell (csv, stdout)."""
        return [_cells(v, self.float32) for v in self.values]


def write(path, rows):
    """rows (a Rows) into path by its extension, atomically."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in EXTENSIONS:
        raise bad_argument("--out writes .csv, .jsonl or .parquet, not %s" % os.path.basename(path),
                           "name it preds.csv, preds.jsonl or preds.parquet")
    writer = {".csv": _csv, ".jsonl": _jsonl, ".parquet": _parquet}[ext]
    fileio.atomic_write(path, lambda tmp: writer(tmp, rows))


def _csv(path, rows):
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(rows.columns)
        # ints and strs as they are: the csv module writes them as str() does, and faster
        out.writerows(zip(*[v if set(map(type, v)) <= {int, str} else _cells(v, rows.float32) for v in rows.values]))


def _jsonl(path, rows):
    """json.dumps of each row's dict (its separators, NaN and Infinity bare), made a column at a time."""
    template = "{" + ", ".join(json.dumps(c).replace("%", "%%") + ": %s" for c in rows.columns) + "}\n"
    with open(path, "w") as f:
        f.writelines(template % row for row in zip(*[_json_values(v) for v in rows.values]))


def _parquet(path, rows):
    try:
        import pyarrow
        import pyarrow.parquet as pq
    except ImportError:
        raise TorchshError("missing_extra", "writing .parquet needs pyarrow", "pip install 'torchsh[parquet]'") from None
    table = pyarrow.table(dict(zip(rows.columns, rows.values)))
    pq.write_table(table, path)


def _cells(values, float32):
    """A column's cells: floats as their dtype's shortest round-trip text (str(np.float32(v)) for float32,
    whose text numpy's astype(str) writes a column at a time; repr for float64), anything else as str."""
    kinds = set(map(type, values))
    if kinds == {float}:
        return np.array(values, dtype=np.float32).astype(str).tolist() if float32 else list(map(repr, values))
    if kinds <= {int, str}:
        return list(map(str, values))
    return [_cell(v, float32) for v in values]


def _cell(value, float32):
    if isinstance(value, float):
        return str(np.float32(value)) if float32 else repr(value)
    return str(value)


def _json_values(values):
    """A column's values as json.dumps writes each (floats by repr, NaN and Infinity bare)."""
    kinds = set(map(type, values))
    if kinds == {float}:
        return [repr(v) if math.isfinite(v) else _NONFINITE[repr(v)] for v in values]
    if kinds == {int}:
        return list(map(int.__repr__, values))
    if kinds == {str}:
        return list(map(encode_basestring_ascii, values))  # json.dumps' own encoder of a str
    return [json.dumps(v, allow_nan=True) for v in values]


_NONFINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
