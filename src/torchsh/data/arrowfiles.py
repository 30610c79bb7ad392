"""Arrow IPC files as the fields of `torch data open` (`.arrow`, `.feather`, `.ipc`, in the file or the stream
format; polars' `write_ipc`, pyarrow's writers), and a `datasets` save_to_disk folder (state.json lists its
data-*.arrow files, stream format), memory-mapped with pa.memory_map: zero-copy. Opening reads the schema and
each record batch's length, nothing else; the pieces are the record batches, converted into the fields' tensors
when read (data/piecetables.py), and the page cache, not the daemon, holds what was touched.

A map read past the end of a file cut short would be SIGBUS: every read checks first that the file still holds
what was mapped (datasets.MapGuard), as .npy fields do.
"""
import json
import os

from torchsh.data import piecetables, streaminfo
from torchsh.data.datasets import MapGuard
from torchsh.errors import TorchshError
from torchsh.fileio import first_line, regular_file

EXTENSIONS = (".arrow", ".feather", ".ipc")
_STATE_BYTES = 1 << 20  # a save_to_disk state.json is a few hundred bytes


def open_fields(paths, options):
    """[PieceField] of Arrow IPC files PATHS as one table (rows in the files' order) under `data open`'s flags."""
    return piecetables.open_fields(ArrowSet(paths), options, paths[0] if len(paths) == 1 else "the Arrow set")


def is_saved_dataset(path):
    """Is PATH a `datasets` save_to_disk folder (state.json beside dataset_info.json)?"""
    return all(os.path.isfile(os.path.join(path, name)) for name in ("state.json", "dataset_info.json"))


def saved_dataset_files(folder):
    """The data-*.arrow files of a save_to_disk folder, in state.json's order (`_data_files`)."""
    path = os.path.join(folder, "state.json")
    st = regular_file(path)
    try:
        if st.st_size > _STATE_BYTES:
            raise ValueError("%d bytes is not a dataset's state" % st.st_size)
        with open(path, "rb") as f:
            names = [entry["filename"] for entry in json.loads(f.read())["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TorchshError("file_error", "%s is not a `datasets` state.json: %s" % (path, first_line(e))) from None
    for name in names:
        if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
            raise TorchshError("file_error", "%s names a data file outside its folder: %r" % (path, name))
    if not names:
        raise TorchshError("file_error", "%s lists no data files" % path)
    return [os.path.join(folder, name) for name in names]


def _layout(path):
    """(schema, each record batch's rows) of an Arrow IPC file, read through a memory map (the file format's
    footer, or the stream format's message headers: their bodies stay on disk)."""
    try:
        batches = _open_batches(path)
        return batches.schema, [batches.get(b).num_rows for b in range(batches.count)]
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        raise TorchshError("file_error", "%s is not a readable Arrow IPC file: %s" % (path, first_line(e)),
                           "is it cut short? polars: df.write_ipc(path); pyarrow: pa.ipc.new_file") from None


class _Batches:
    """One mapped file's record batches, by number: the file format's reader, or the stream format's batches
    listed once (their buffers are slices of the map: nothing is copied)."""

    def __init__(self, mapped):
        pa = piecetables.pyarrow()
        self.mapped = mapped
        try:
            self.reader, self.listed = pa.ipc.open_file(mapped), None
            self.schema, self.count = self.reader.schema, self.reader.num_record_batches
        except pa.ArrowInvalid:  # no file footer: the stream format
            mapped.seek(0)
            stream = pa.ipc.open_stream(mapped)
            self.reader, self.listed, self.schema = None, list(stream), stream.schema
            self.count = len(self.listed)

    def get(self, b):
        return self.listed[b] if self.listed is not None else self.reader.get_batch(b)


def _open_batches(path):
    return _Batches(piecetables.pyarrow().memory_map(path, "r"))


class ArrowSet:
    """A set of memory-mapped Arrow IPC files: pieces are their record batches, in file order."""

    def __init__(self, paths):
        self.files, self.batches, self.piece_rows, self.schema = list(paths), [], [], None
        self.sizes, self._maps = [], {}
        for f, path in enumerate(self.files):
            st = regular_file(path)
            schema, lengths = _layout(path)
            self.schema = piecetables.same_schema(self.schema, schema, self.files[0], path)
            self.sizes.append(st.st_size)
            self.batches += [(f, b) for b in range(len(lengths))]
            self.piece_rows += lengths
        self.bytes = self.mapped_bytes = sum(self.sizes)

    def place(self, k):
        f, b = self.batches[k]
        return "%s record batch %d" % (self.files[f], b)

    def read(self, k, columns):
        """Record batch k's COLUMNS as a pyarrow Table (zero-copy: slices of the map)."""
        pa = piecetables.pyarrow()
        f, b = self.batches[k]
        guard = self._mapped(f)
        guard.check()
        try:
            batch = guard.mapped.get(b)
            return pa.Table.from_batches([batch.select(columns)])
        except (OSError, ValueError, IndexError) as e:
            raise TorchshError("file_error", "cannot read %s: %s" % (self.place(k), first_line(e)),
                               "the file is damaged: write it again") from None

    def _mapped(self, f):
        guard = self._maps.get(f)
        if guard is None:
            path = self.files[f]
            try:
                guard = MapGuard(path, lambda: _open_batches(path))
            except (OSError, ValueError) as e:
                raise TorchshError("file_error", "cannot read %s: %s" % (path, first_line(e))) from None
            if guard.size != self.sizes[f]:
                guard.close()
                raise TorchshError("file_error", "%s changed after the dataset was opened" % path,
                                   "`torch data open` it again")
            self._maps[f] = guard
        return guard

    def info(self):
        """What `data info` shows: schema, files, rows, record batches, bytes (from the headers alone)."""
        return streaminfo.set_info(self, "arrow", "record batch")

    def __getstate__(self):
        return dict(self.__dict__, _maps={})  # a map does not cross a process boundary

