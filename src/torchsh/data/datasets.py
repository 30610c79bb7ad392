"""FileDataset: items are tuples of tensors, one per field, fields side by side (x.npy y.npy -> (x[i], y[i])).

A field is one column of items with __len__ and item(i). In-memory fields (TensorField) hold a tensor;
file-backed ones (NpyField, SafetensorsField) read one row per item and hold nothing but the path:
the memory map or safetensors handle opens on first use in each process and is dropped when the
dataset is pickled (a DataLoader worker opens its own).
"""
import operator
import os

import numpy as np
import torch
import torch.utils.data
from safetensors import safe_open

from torchsh import fileio
from torchsh.errors import TorchshError
from torchsh.vocab import dtype_name


class TensorField:
    """A field held in memory: item i is tensor[i] (a view, as TensorDataset gives). A table's columns
    may name what their numbers stand for: `classes` (a label column's class names, by index),
    `categories` ({column: names} of the one-hot blocks in a feature field) and `columns` (the table's
    columns a feature field was made of, in order: a model's card checks them at predict)."""

    def __init__(self, name, tensor, classes=None, categories=None, columns=None):
        if tensor.dim() == 0:
            raise TorchshError("shape_mismatch", "%s is a single value (0-d), which has no items" % name)
        self.name, self.tensor, self.classes, self.categories = name, tensor, classes, categories
        self.columns = columns

    def __len__(self):
        return self.tensor.shape[0]

    def item(self, i):
        return self.tensor[i]

    def rows(self, index):
        """The rows at index (a slice, or an int64 tensor of indices) stacked, as collate stacks the items."""
        return stacked_rows(self.tensor, index)

    def held_tensors(self):
        return [self.tensor]

    mapped_bytes = 0


def stacked_rows(tensor, index):
    """tensor[index] contiguous and owned (no view of the data: a model's in-place op must not write it)."""
    if isinstance(index, slice):
        return tensor[index].clone(memory_format=torch.contiguous_format)
    return tensor[index].contiguous()  # a gather copies already


class MapGuard:
    """A mapped file's descriptor and its size when mapped. Reading a map past the end of its file raises
    SIGBUS, which would end the daemon and every object it holds; a file written over in place (`np.save`,
    `cp`) is cut first. So every read checks, with one fstat, that the file still holds what was mapped: a
    file cut short is a file_error (the race left is the few microseconds between the check and the read)."""

    def __init__(self, path, open_map):
        """open_map() maps path; it must map the file this opened (checked by inode), else file_error."""
        self.path, self.fd = path, os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO: fails, not hangs
        try:
            self.mapped = open_map()
            st = os.fstat(self.fd)
            if os.stat(path).st_ino != st.st_ino:
                raise TorchshError("file_error", "%s was replaced while it was opened" % path, "open it again")
            self.size = st.st_size
        except BaseException:
            self.close()
            raise

    def check(self):
        if os.fstat(self.fd).st_size < self.size:
            raise TorchshError("file_error", "%s was cut short while a dataset reads it (written over in place?)"
                               % self.path, "write a new file and rename it over the old; then `torch data open` "
                               "it again")

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __del__(self):
        if getattr(self, "fd", None) is not None:
            self.close()


class _MappedField:
    """A field of a memory-mapped file: mapped on first use (in each process: a map does not cross a process
    boundary), checked on every read."""

    def _mapped(self, open_map, errors):
        """The map open_map() makes (once), checked to lie within the file (MapGuard); ERRORS raised while mapping
        are the file's trouble: file_error."""
        if self._map is None:
            try:
                self._map = MapGuard(self.path, open_map)
            except TorchshError:
                raise
            except errors as e:
                raise fileio.file_error(self.path, "read", e) from None
        self._map.check()
        return self._map.mapped

    def __len__(self):
        return self.length

    def held_tensors(self):
        return []

    def __getstate__(self):
        return dict(self.__dict__, _map=None)


class NpyField(_MappedField):
    """A field over an .npy file, memory-mapped (np.load(mmap_mode="r")): item i is a copy of row i,
    so the file is never read whole and the page cache, not the daemon, holds what was touched."""

    def __init__(self, name, path):
        st = fileio.regular_file(path)
        with open(path, "rb") as f:
            fileio.check_npy_header(f, st.st_size, path)  # truncated files and object arrays, refused early
        self.name, self.path, self._map = name, path, None
        array = self.array
        if array.ndim == 0:
            raise TorchshError("shape_mismatch", "%s holds a single value (0-d), which has no items" % path)
        _check_numpy_dtype(array.dtype, path)
        self.length, self.mapped_bytes = array.shape[0], st.st_size

    @property
    def array(self):
        """The map, checked to lie within the file (MapGuard): read it only right after this."""
        return self._mapped(lambda: np.load(self.path, mmap_mode="r", allow_pickle=False), (OSError, ValueError))

    def item(self, i):
        row = np.array(self.array[i])  # a private copy: the tensor must not alias the read-only map
        if not row.dtype.isnative:
            row = row.astype(row.dtype.newbyteorder("="))
        return torch.from_numpy(row)

    def items(self, indices):
        """Rows at indices, read in one gather (a batch): views of one private copy."""
        return self.rows(torch.as_tensor(indices, dtype=torch.int64)).unbind(0)

    def rows(self, index):
        """The rows at index (a slice, or an int64 tensor of indices) stacked: one private copy, read in one gather."""
        rows = np.array(self.array[index.numpy() if isinstance(index, torch.Tensor) else index])  # never the map
        if not rows.dtype.isnative:
            rows = rows.astype(rows.dtype.newbyteorder("="))
        return torch.from_numpy(rows)


class SafetensorsField(_MappedField):
    """One tensor of a .safetensors file, read lazily: item i reads row i through safe_open's slice."""

    def __init__(self, name, path, key):
        self.name, self.path, self.key, self._map = name, path, key, None
        shape = self.slice.get_shape()
        if not shape:
            raise TorchshError("shape_mismatch", "%s tensor %s is a single value (0-d), which has no items"
                               % (path, key))
        self.length = shape[0]
        rows = self.slice[0:1]
        self.mapped_bytes = rows.element_size() * int(np.prod(shape, dtype=np.int64))

    @property
    def slice(self):
        """safe_open's slice (it maps the file), checked to lie within the file (MapGuard)."""
        # any error of safe_open's (SafetensorError, OSError) is a damaged or vanished file
        return self._mapped(lambda: safe_open(self.path, framework="pt").get_slice(self.key), Exception)

    def item(self, i):
        return self.slice[i]


def _check_numpy_dtype(dtype, where):
    try:
        torch.from_numpy(np.empty(0, dtype=dtype.newbyteorder("=")))
    except TypeError:
        raise TorchshError("file_error", "%s: numpy dtype %s has no PyTorch equivalent" % (where, dtype)) from None


class FileDataset(torch.utils.data.Dataset):
    """Items (field0[i], field1[i], …): the fields of one or more files side by side, the target last.
    `classes` names the class indices when known (an image folder's sub-folders, a text label column's
    sorted names); `categories` the one-hot columns' ({column: names}, from `data open --onehot`)."""

    def __init__(self, fields, classes=None):
        lengths = {len(f) for f in fields}
        if len(lengths) > 1:
            raise TorchshError("shape_mismatch", "the fields have different lengths: %s"
                               % ", ".join("%s %d" % (f.name, len(f)) for f in fields),
                               "every file (or column group) needs one row per item")
        self.fields = list(fields)
        self.classes = classes or next((f.classes for f in reversed(self.fields) if getattr(f, "classes", None)), None)
        self.categories = {k: v for f in self.fields for k, v in (getattr(f, "categories", None) or {}).items()}
        self.length = lengths.pop() if lengths else 0

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        i = self._index(index)
        return tuple(f.item(i) for f in self.fields)

    def __getitems__(self, indices):
        """A batch of items (DataLoader's fetcher asks for one batch at a time): a memory-mapped field
        reads its rows in one gather, the others item by item; the values are __getitem__'s."""
        indices = [self._index(i) for i in indices]
        columns = [f.items(indices) if hasattr(f, "items") else [f.item(i) for i in indices] for f in self.fields]
        return list(zip(*columns))

    def _index(self, index):
        i = operator.index(index)
        if i < 0:
            i += self.length
        if not 0 <= i < self.length:
            raise IndexError("index %d is out of range for a dataset of length %d" % (index, self.length))
        return i

    def held_tensors(self):
        return [t for f in self.fields for t in f.held_tensors()]

    @property
    def mapped_bytes(self):
        return sum(f.mapped_bytes for f in self.fields)

    @property
    def field_names(self):
        return [f.name for f in self.fields]

    @property
    def stream(self):
        """What its piece-backed fields read (schema, files, rows, pieces, bytes: from the files' metadata), or
        None when no field reads pieces."""
        return next((f.info() for f in self.fields if hasattr(f, "piece_starts") and hasattr(f, "info")), None)

    @property
    def field_columns(self):
        """Each field's table columns in order (None for a field that is not made of named columns)."""
        return [getattr(f, "columns", None) for f in self.fields]


def wrapped_datasets(d):
    """A dataset and those it wraps (a Subset's, a transform's `.dataset`), outermost first."""
    out = []
    while isinstance(d, torch.utils.data.Dataset) and not any(d is x for x in out):
        out.append(d)
        d = getattr(d, "dataset", None)
    return out



def describe(dataset):
    """{length, fields: [{name, shape, dtype}], classes?, categories?, standardize?, tokens?}: the shapes and
    dtypes of item 0's fields, and what the dataset's numbers stand for (see known()); tokens: `data tokenize`'s
    counts (data/tokenize.py)."""
    length = len(dataset)
    names = known(dataset, "field_names")
    fields = []
    if length:
        item = dataset[0]
        item = item if isinstance(item, (tuple, list)) else (item,)
        for k, t in enumerate(item):
            name = names[k] if names and k < len(names) else str(k)
            if isinstance(t, torch.Tensor):
                fields.append({"name": name, "shape": list(t.shape), "dtype": dtype_name(t.dtype)})
            else:
                fields.append({"name": name, "shape": None, "dtype": type(t).__name__})
    out = {"length": length, "fields": fields}
    for key, attribute, as_json in (("classes", "classes", list), ("categories", "categories", dict),
                                    ("standardize", "standardization", dict), ("tokens", "token_counts", dict),
                                    ("stream", "stream", dict)):
        value = known(dataset, attribute)
        if value:
            out[key] = as_json(value)
    return out


def known(dataset, attribute):
    """What the dataset, or one it wraps (a split's, a transform's), knows by that attribute: `classes` (the
    class names of the label's indices), `categories` ({column: names} of one-hot columns), `standardization`
    ({field, mean, std} learned by --standardize), `field_names`; None when none does. Whatever keeps a
    model's data beside it (run.json, a checkpoint, predict) reads them here."""
    return next((getattr(d, attribute) for d in wrapped_datasets(dataset) if getattr(d, attribute, None)), None)


def stem(path):
    return os.path.splitext(os.path.basename(path.rstrip("/")))[0] or path
