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
import os

import numpy as np

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument

EXTENSIONS = (".csv", ".jsonl", ".parquet")


class Rows(list):
    """Rows (dicts) in the order of `columns`: JSON rows under --json, through the API and in Nushell (a
    table); tab-separated text with a header on a terminal."""

    def __init__(self, rows, columns, float32=True):
        super().__init__(rows)
        self.columns, self.float32 = list(columns), float32

    def text(self):
        lines = ["\t".join(self.columns)]
        lines += ["\t".join(_cell(r[c], self.float32) for c in self.columns) for r in self]
        return "\n".join(lines) + "\n"


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
        out.writerows([_cell(r[c], rows.float32) for c in rows.columns] for r in rows)


def _jsonl(path, rows):
    with open(path, "w") as f:
        f.writelines(json.dumps({c: r[c] for c in rows.columns}, allow_nan=True) + "\n" for r in rows)


def _parquet(path, rows):
    try:
        import pyarrow
        import pyarrow.parquet as pq
    except ImportError:
        raise TorchshError("missing_extra", "writing .parquet needs pyarrow", "pip install 'torchsh[parquet]'") from None
    table = pyarrow.table({c: [r[c] for r in rows] for c in rows.columns})
    pq.write_table(table, path)


def _cell(value, float32):
    if isinstance(value, float):
        return str(np.float32(value)) if float32 else repr(value)
    return str(value)
