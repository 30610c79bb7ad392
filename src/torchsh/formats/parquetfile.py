""".parquet files through pyarrow (the `parquet` extra): a table's numeric columns as tensors, read into
memory column by column, one tensor per column group (columns side by side; one column: 1-D)."""
import numpy as np
import torch

from torchsh.errors import TorchshError, bad_argument
from torchsh.fileio import file_error, regular_file


def read(path, groups=None, dtype=None):
    """[Tensor] of the column groups (names or 0-based indices; None: every column, one tensor), each cast to
    dtype (None: as stored)."""
    names = column_names(path)
    groups = [[column_name(c, names, path) for c in g] for g in (groups or [names])]
    table = _pyarrow().read_table(path, columns=sorted({c for g in groups for c in g}))
    return [_columns_tensor(table, g, dtype, path) for g in groups]


def column_names(path):
    pq = _pyarrow()
    regular_file(path)
    try:
        return pq.read_schema(path).names
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        raise file_error(path, "read", e) from None


def column_name(text, names, path):
    """The column a --columns item names: a name, or a 0-based index (negative from the end)."""
    if text in names:
        return text
    if text.lstrip("-").isdigit() and -len(names) <= int(text) < len(names):
        return names[int(text)]
    raise bad_argument("%s has no column %r" % (path, text), "its columns: %s" % ", ".join(names))


def _pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise TorchshError("missing_extra", "reading .parquet needs pyarrow", "pip install 'torchsh[parquet]'") from None
    return pq


def _columns_tensor(table, columns, dtype, path):
    """The columns side by side as one tensor (one column: 1-D), cast to dtype (None: as stored)."""
    arrays = []
    for c in columns:
        a = table.column(c).to_numpy()
        if a.dtype.kind not in "biuf":
            raise bad_argument("%s column %r holds %s, not numbers" % (path, c, table.schema.field(c).type),
                               "pick numeric columns with --columns and --target")
        arrays.append(a)
    stacked = arrays[0] if len(arrays) == 1 else np.column_stack(arrays)
    t = torch.from_numpy(np.array(stacked))  # a private, writable copy of what pyarrow lent
    return t.to(dtype) if dtype is not None else t
