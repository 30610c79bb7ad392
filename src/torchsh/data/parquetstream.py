"""A set of Parquet files read by row group on demand (`torch data open 'shards/*.parquet' --stream`): at open
only each file's footer (schema, row groups and their row counts); a row group is read when an item in it is
asked for, its columns converted into the fields' tensors and kept in the dataset's PieceCache.

Every file's schema must be the first's (a shard that differs is refused, naming both files and the column); a
file whose footer is damaged or cut short is refused at open by name; a row group that fails to read later is a
file_error naming the file and the row group. A file changed after the open (size or mtime) is refused when read.

open_fields(paths, options) is the entry point (`data open --stream`, and `data sql`'s result).
"""
import os

from torchsh.data import piecetables, streaminfo
from torchsh.errors import TorchshError
from torchsh.fileio import file_error, first_line, regular_file

_OPEN_FILES = 16  # per process: a set of 1000 shards keeps at most this many descriptors open


def open_fields(paths, options):
    """[PieceField] of the Parquet files PATHS as one table (rows in the files' order) under `data open`'s flags."""
    parquet_set = ParquetSet(paths)
    return piecetables.open_fields(parquet_set, options, paths[0] if len(paths) == 1 else "the Parquet set")


class ParquetSet:
    """The footers of a set of Parquet files: pieces are their row groups, in file order."""

    def __init__(self, paths):
        pq = piecetables.pyarrow().parquet
        self.files, self.stamps, self.groups, self.piece_rows, self.schema = list(paths), [], [], [], None
        self.bytes, self.mapped_bytes, self._open = 0, 0, {}
        for f, path in enumerate(self.files):
            st = regular_file(path)
            try:
                meta = pq.read_metadata(path)  # the footer only
                schema = meta.schema.to_arrow_schema()
            except (OSError, ValueError) as e:  # a truncated file has no footer: ArrowInvalid
                raise TorchshError("file_error", "%s is not a readable Parquet file: %s" % (path, first_line(e)),
                                   "is it cut short, or still being written?") from None
            self.schema = piecetables.same_schema(self.schema, schema, self.files[0], path)
            self.stamps.append((st.st_size, st.st_mtime_ns))
            self.bytes += st.st_size
            for g in range(meta.num_row_groups):
                self.groups.append((f, g))
                self.piece_rows.append(meta.row_group(g).num_rows)

    def place(self, k):
        f, g = self.groups[k]
        return "%s row group %d" % (self.files[f], g)

    def read(self, k, columns):
        """Row group k's COLUMNS as a pyarrow Table; file_error naming the file and the row group."""
        f, g = self.groups[k]
        handle = self._handle(f)
        try:
            return handle.read_row_group(g, columns=columns, use_threads=False)
        except (OSError, ValueError) as e:
            raise TorchshError("file_error", "cannot read %s: %s" % (self.place(k), first_line(e)),
                               "the file is damaged: write it again, or leave it out of the set") from None

    def _handle(self, f):
        handle = self._open.get(f)
        if handle is not None:
            return handle
        path = self.files[f]
        try:
            st = os.stat(path)
            if (st.st_size, st.st_mtime_ns) != self.stamps[f]:
                raise TorchshError("file_error", "%s changed after the dataset was opened" % path,
                                   "`torch data open` it again")
            handle = piecetables.pyarrow().parquet.ParquetFile(path)
        except (OSError, ValueError) as e:
            raise file_error(path, "read", e) from None
        if len(self._open) >= _OPEN_FILES:
            self._open.pop(next(iter(self._open))).close()
        self._open[f] = handle
        return handle

    def info(self):
        """What `data info` shows of a stream, from the footers alone."""
        return streaminfo.set_info(self, "parquet", "row group")

    def __getstate__(self):
        return dict(self.__dict__, _open={})  # a worker opens its own files
