"""Where `data tokenize` reads its documents: one text column, PIECE_ROWS documents at a time (a list of str per
piece), so a corpus bigger than memory is never held whole.

A .jsonl file     each non-blank line a JSON object; the document is its COLUMN (a string)
a .parquet file   COLUMN read row group by row group through pyarrow (the `parquet` extra)
an .arrow file    (.feather, .ipc: Arrow IPC, file or stream format) memory-mapped, record batch by batch
a dataset         whose items hold a str in the field named COLUMN (FileDataset.field_names), read a piece
                  of indices at a time
A document that is missing or not text is refused naming its file and line (or row).
"""
import json
import os

from torchsh import fileio
from torchsh.data import arrowfiles, parquetstream
from torchsh.data.datasets import known
from torchsh.errors import bad_argument

PIECE_ROWS = 1024
JSONL = (".jsonl", ".ndjson")
KINDS = JSONL + (".parquet",) + arrowfiles.EXTENSIONS


def file_texts(path, column):
    """The documents of the file at PATH, piece by piece."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in KINDS:
        raise bad_argument("%s: data tokenize reads %s files" % (path, " ".join(KINDS)),
                           "or a dataset whose items hold text: torch data tokenize D --column text …")
    fileio.regular_file(path)
    if ext in JSONL:
        return _jsonl(path, column)
    return _arrow_batches(path, column, ext == ".parquet")


def _jsonl(path, column):
    piece = []
    try:
        with open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    piece.append(_jsonl_text(line, column, "%s:%d" % (path, n)))
                if len(piece) == PIECE_ROWS:
                    yield piece
                    piece = []
    except OSError as e:
        raise fileio.file_error(path, "read", e) from None
    if piece:
        yield piece


def _jsonl_text(line, column, where):
    try:
        row = json.loads(line)
    except ValueError as e:  # UnicodeDecodeError is one
        raise bad_argument("%s is not JSON: %s" % (where, fileio.first_line(e))) from None
    text = row.get(column) if isinstance(row, dict) else None
    if not isinstance(text, str):
        raise bad_argument("%s has no text under %r" % (where, column), "--column names the key of the documents")
    return text


def _arrow_batches(path, column, parquet):
    """COLUMN of a .parquet or Arrow IPC file, piece by piece (row groups, record batches: the sets `data open`
    reads, their errors naming the file and the piece), as lists of str."""
    pieces = parquetstream.ParquetSet([path]) if parquet else arrowfiles.ArrowSet([path])
    if column not in pieces.schema.names:
        raise bad_argument("%s has no column %r" % (path, column), "its columns: %s" % ", ".join(pieces.schema.names))
    row = 0
    for k, rows in enumerate(pieces.piece_rows):
        values = pieces.read(k, [column]).column(0).to_pylist()
        for j in range(0, len(values), PIECE_ROWS):
            yield _texts(values[j:j + PIECE_ROWS], column, path, row + j)
        row += rows


def _texts(values, column, path, first_row):
    for k, v in enumerate(values):
        if not isinstance(v, str):
            raise bad_argument("%s row %d, column %r holds %s, not text" % (path, first_row + k + 1, column,
                                                                             "nothing" if v is None else type(v).__name__))
    return values


def dataset_texts(dataset, column):
    """The str in field COLUMN of DATASET's items, PIECE_ROWS items at a time."""
    names = known(dataset, "field_names") or []
    if column not in names:
        raise bad_argument("the dataset has no field %r" % column,
                           "its fields: %s" % (", ".join(names) or "unnamed (`torch data info D`)"))
    k = names.index(column)
    fetch = getattr(dataset, "__getitems__", None) or (lambda indices: [dataset[i] for i in indices])
    for start in range(0, len(dataset), PIECE_ROWS):
        items = fetch(list(range(start, min(start + PIECE_ROWS, len(dataset)))))
        texts = [item[k] for item in items]
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise bad_argument("item %d's field %r holds %s, not text" % (start + i, column, type(text).__name__))
        yield texts
