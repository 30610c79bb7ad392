"""Where `data tokenize` reads its documents: one text column, PIECE_ROWS documents at a time (a list of str per
piece), so a corpus bigger than memory is never held whole.

A .jsonl file     each non-blank line a JSON object; the document is its COLUMN (a string)
a .parquet file   COLUMN read row group batch by batch through pyarrow (the `parquet` extra)
an .arrow file    (.feather, .ipc: Arrow IPC, file or stream format) memory-mapped, record batch by batch
a dataset         whose items hold a str in the field named COLUMN (FileDataset.field_names), read a piece
                  of indices at a time
A document that is missing or not text is refused naming its file and line (or row).
"""
import json
import os

from torchsh import fileio
from torchsh.data.datasets import known
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import parquetfile

PIECE_ROWS = 1024
JSONL = (".jsonl", ".ndjson")
ARROW = (".arrow", ".feather", ".ipc")
KINDS = JSONL + (".parquet",) + ARROW


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
    """COLUMN of a .parquet or Arrow IPC file, batch by batch, as lists of str."""
    pa = _pyarrow()
    try:
        batches = _parquet_batches(path, column) if parquet else _ipc_batches(pa, path, column)
        row = 0
        for batch in batches:
            values = batch.column(0).to_pylist()
            for k in range(0, len(values), PIECE_ROWS):
                yield _texts(values[k:k + PIECE_ROWS], column, path, row + k)
            row += len(values)
    except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError: a damaged file
        raise fileio.file_error(path, "read", e) from None


def _parquet_batches(path, column):
    pq = parquetfile._pyarrow()
    names = parquetfile.column_names(path)
    if column not in names:
        raise bad_argument("%s has no column %r" % (path, column), "its columns: %s" % ", ".join(names))
    return pq.ParquetFile(path).iter_batches(batch_size=PIECE_ROWS, columns=[column])


def _ipc_batches(pa, path, column):
    import pyarrow.ipc as ipc
    source = pa.memory_map(path, "r")
    try:
        reader = ipc.open_file(source)
        batches = (reader.get_batch(k) for k in range(reader.num_record_batches))
    except pa.ArrowInvalid:  # not the file format: the stream format
        source.seek(0)
        reader = ipc.open_stream(source)
        batches = iter(reader)
    if column not in reader.schema.names:
        raise bad_argument("%s has no column %r" % (path, column), "its columns: %s" % ", ".join(reader.schema.names))
    return (batch.select([column]) for batch in batches)


def _texts(values, column, path, first_row):
    for k, v in enumerate(values):
        if not isinstance(v, str):
            raise bad_argument("%s row %d, column %r holds %s, not text" % (path, first_row + k + 1, column,
                                                                             "nothing" if v is None else type(v).__name__))
    return values


def _pyarrow():
    try:
        import pyarrow
    except ImportError:
        raise TorchshError("missing_extra", "reading .parquet and .arrow needs pyarrow",
                           "pip install 'torchsh[parquet]'") from None
    return pyarrow


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
