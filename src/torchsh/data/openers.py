"""One opener per file type for `torch data open`: each turns a path into fields (datasets.py), reading
through formats/ where it reads a file whole.

.npy          memory-mapped, one field (rows read on demand)
.npz          each array one field; zip members cannot be memory-mapped, so each is read whole into
              memory (headers checked before anything is allocated, as `torch load` does)
.safetensors  each tensor one field, read lazily row by row through safe_open
.csv          the parser and options of `torch load` (header detection, --delimiter, --columns), read as
              pandas reads a table (tables.py): features [k] float32, the target [] (int64, class indices
              of text labels, or float), --onehot COL for text features
.parquet      through pyarrow (the `parquet` extra), read into memory column by column, as .csv is
a folder      the torchvision ImageFolder layout (images.py)

--columns picks fields by name (npz arrays, safetensors tensors) or column groups (csv, parquet; each
--columns one field); --target names the field put last (alone, every other column is a feature).
"""
import os
from dataclasses import dataclass

import torch
from safetensors import safe_open

from torchsh import fileio
from torchsh.data import arrowfiles, images, parquetstream, shards, tables, tarshards
from torchsh.data.datasets import FileDataset, NpyField, SafetensorsField, TensorField, stem
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import extensions
from torchsh.formats.flags import column_group

EXTENSIONS = (".npy", ".npz", ".safetensors", ".csv", ".parquet") + arrowfiles.EXTENSIONS + (".tar",)


@dataclass
class Options:
    columns: object = None      # a --columns value, or a list of them (the flag repeated)
    target: str = None
    dtype: torch.dtype = None
    target_dtype: torch.dtype = None
    header: bool = None
    no_header: bool = False
    delimiter: str = None
    onehot: object = None       # a --onehot value, or a list of them (the flag repeated)
    stream: bool = False        # a .parquet set read by row group on demand (parquetstream.py)

    def given(self, *names):
        return [n for n in names if getattr(self, n) not in (None, False)]


def open_dataset(paths, options, cwd=None):
    """A FileDataset over the files side by side (quoted globs and braces expanded: shards.py), or over one
    table set (a Parquet set with --stream, Arrow files, a `datasets` folder); --columns/--target pick within
    a single file or set."""
    paths = shards.expand(paths, cwd)
    tars = [p.lower().endswith(".tar") for p in paths]
    if tars and all(tars):  # WebDataset shards: one table, shard after shard
        return FileDataset(tarshards.tar_fields(paths, options))
    if any(tars):
        raise bad_argument("WebDataset shards (.tar) open as one dataset, alone", "open the .tar files without the others")
    table = _table_set(paths, options)
    if table is not None:
        return FileDataset(table)
    _refuse(options, "these files (--stream reads a .parquet set)", "stream")
    if len(paths) > 1 and options.given("columns", "target", "onehot"):
        raise bad_argument("--%s picks within one file, and %d files were given" % (options.given("columns", "target",
                                                                                                  "onehot")[0], len(paths)),
                           "open the files side by side without it, one file with --columns/--target, or a "
                           ".parquet set as one table with --stream")
    fields, classes = [], None
    for path in paths:
        got, found = open_fields(path, options)
        fields += got
        classes = classes or found
    return FileDataset(fields, classes)


def _table_set(paths, options):
    """The fields of PATHS read as one table by pieces (a Parquet set with --stream; Arrow files and a `datasets`
    save_to_disk folder always, memory-mapped), or None when they are files of other kinds."""
    kinds = {"saved" if os.path.isdir(p) and arrowfiles.is_saved_dataset(p) else os.path.splitext(p)[1].lower()
             for p in paths}
    arrow = bool(kinds) and kinds <= set(arrowfiles.EXTENSIONS)
    if not (options.stream and kinds == {".parquet"} or arrow or kinds == {"saved"}):
        if kinds & (set(arrowfiles.EXTENSIONS) | {"saved"}):
            raise bad_argument("Arrow files and `datasets` folders open as one table, alone",
                               "open them without files of other kinds")
        return None
    _refuse(options, "a table set", "header", "no_header", "delimiter")
    if kinds == {".parquet"}:
        return parquetstream.open_fields(paths, options)
    if kinds == {"saved"}:
        if len(paths) > 1:
            raise bad_argument("open one `datasets` folder at a time (%d given)" % len(paths))
        paths = arrowfiles.saved_dataset_files(paths[0])
    return arrowfiles.open_fields(paths, options)


def open_fields(path, options):
    """([Field], classes or None) of one path."""
    if os.path.isdir(path):
        _refuse(options, "an image folder", "columns", "target", "dtype", "target_dtype", "header", "no_header",
                "delimiter", "onehot")
        return images.open_folder(path)
    ext = os.path.splitext(path)[1].lower()
    opener = _OPENERS.get(ext)
    if opener is None:
        raise bad_argument("unknown file type %r" % (ext or path),
                           "use one of %s, or an image folder (one sub-folder per class)" % " ".join(EXTENSIONS))
    if not os.path.exists(path):
        raise TorchshError("file_error", "no such file or folder: %s" % path)
    if ext != ".csv":
        _refuse(options, ext + " files", "header", "no_header", "delimiter")
    if ext not in (".csv", ".parquet"):
        _refuse(options, ext + " files", "dtype", "target_dtype", "onehot")
    return opener(path, options), None


def _refuse(options, what, *names):
    given = options.given(*names)
    if given:
        hint = "`torch data transform D --dtype …` converts any field" if given[0] in ("dtype", "target_dtype") else None
        raise bad_argument("--%s does not apply to %s" % (given[0], what), hint)


def _npy(path, options):
    _refuse(options, ".npy files (one array, one field)", "columns", "target")
    return [NpyField(stem(path), path)]


def _npz(path, options):
    tensors = extensions.read(path, extensions.FORMATS[".npz"].read)
    return [TensorField(name, tensors[name]) for name in _pick(list(tensors), options, path)]


def _safetensors(path, options):
    fileio.regular_file(path)
    try:
        names = list(safe_open(path, framework="pt").keys())
    except Exception as e:  # SafetensorError: not a safetensors file
        raise fileio.file_error(path, "read", e) from None
    return [SafetensorsField(name, path, name) for name in _pick(names, options, path)]


def _pick(names, options, path):
    """The named arrays in order: --columns a,b (or all), then --target last."""
    chosen = names
    if options.columns is not None:
        groups = options.columns if isinstance(options.columns, list) else [options.columns]
        chosen = [n for g in groups for n in column_group(g)]
    elif options.target is not None:
        chosen = [n for n in names if n != options.target]
    if options.target is not None:
        chosen = [n for n in chosen if n != options.target] + [options.target]
    for name in chosen:
        if name not in names:
            raise bad_argument("%s has no array %r" % (path, name), "it holds: %s" % " ".join(names))
    return chosen


_OPENERS = {".npy": _npy, ".npz": _npz, ".safetensors": _safetensors, ".csv": tables.csv_fields,
            ".parquet": tables.parquet_fields}
