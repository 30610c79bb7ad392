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
    return list(column_types(path))


def column_types(path):
    """{column name: its pyarrow type, as text (int64, double, string, dictionary<…>)}, in the file's order."""
    pq = _pyarrow()
    regular_file(path)
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        raise file_error(path, "read", e) from None
    return {f.name: str(f.type) for f in schema}


def is_text(type_text):
    """Does a column of this type (column_types' text) hold text: strings, or categories of strings?"""
    return type_text in ("string", "large_string", "string_view") or type_text.startswith("dictionary<values=string")


def text_column(path, name):
    """One column's values as text, one per row (a label or category column); a missing value is refused."""
    values = _pyarrow().read_table(path, columns=[name]).column(name).to_pylist()
    if None in values:
        raise TorchshError("file_error", "%s row %d, column %r is empty" % (path, values.index(None) + 1, name),
                           "every label and category needs a value")
    return [str(v) for v in values]


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
