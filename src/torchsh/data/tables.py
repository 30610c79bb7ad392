""".csv and .parquet tables as the fields of `torch data open`, read the way pandas reads them.

features    each --columns group (or, with --target alone, every other column) is one field: float32 (or
            --dtype), each item of shape [k] even for one column (pandas' df[['x']]). A text column is
            refused by name unless --onehot COL encodes it: one 0/1 column per category, in its place,
            the categories sorted (the field's `categories`).
target      --target COL is the last field, one value per item (shape [], pandas' df['y']). Its dtype is
            --target_dtype, else the column's: int64 when every cell is an integer, class indices when no
            cell is a number (classes: the sorted names, as torchvision's ImageFolder numbers its folders),
            else float32 (or --dtype); a parquet number column keeps its stored dtype.
Errors name the row and the column (a non-number in row 7 of column 'petal').
"""
import re

import torch

from torchsh.data.datasets import TensorField, stem
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import csvfile, parquetfile
from torchsh.formats.flags import column_group, table_options

_INTEGER = re.compile(r"[+-]?[0-9]+")


def csv_fields(path, options):
    """The fields of a .csv file under `data open`'s flags."""
    flags = table_options(".csv", options.columns, options.header, options.no_header, options.delimiter)
    read = dict(header=flags["header"], delimiter=flags["delimiter"])
    names, width = csvfile.columns(path, **read)
    resolve = lambda group: csvfile.column_indices(group, names, width, path)  # noqa: E731
    target = resolve([options.target])[0] if options.target is not None else None
    onehot = {i for g in onehot_groups(options) for i in resolve(g)}
    groups = flags["groups"]
    if groups is None and target is None and not onehot:  # the whole table, rows × columns (pandas .values)
        values = csvfile.read(path, dtype=options.dtype, squeeze=False, **read)[0]
        return [TensorField(stem(path), values, columns=list(names) if names else None)]
    if groups is None:
        groups, labels = [[i for i in range(width) if i != target]], ["features"]
    else:
        groups, labels = [resolve(g) for g in groups], [",".join(g) for g in groups]
    column_name = lambda i: names[i] if names else str(i)  # noqa: E731
    table = _CsvTable(path, read, names, column_name)
    check_onehot(onehot, groups, column_name, path)
    fields = [_features(table, label, [i for i in g if i != target], onehot, options.dtype)
              for label, g in zip(labels, groups) if [i for i in g if i != target]]
    if target is not None:
        fields.append(_csv_target(table, target, options))
    return fields


class _CsvTable:
    """One .csv file's columns, read on demand: numbers through csvfile.read, text one column at a time."""

    def __init__(self, path, read, names, column_name):
        self.path, self.read, self.names, self.name = path, read, names, column_name

    def numbers(self, columns, dtype):
        """Rows × len(columns); a text column among them is refused by name (--onehot encodes it)."""
        try:
            return csvfile.read(self.path, [[str(i) for i in columns]], dtype, squeeze=False, **self.read)[0]
        except TorchshError:
            for i in columns:
                if not any(_number(c) is not None for c in self.text(i)[0] if c):
                    raise text_feature(self.path, self.name(i)) from None
            raise

    def text(self, column):
        return csvfile.text_column(self.path, column, **self.read)


def _features(table, label, group, onehot, dtype):
    """One feature field: the group's columns side by side, each --onehot column expanded in its place."""
    numeric = [i for i in group if i not in onehot]
    values = table.numbers(numeric, dtype) if numeric else None
    return _assemble(label, group, onehot, values, lambda i: table.text(i)[0], table.name, dtype or torch.float32)


def _assemble(label, group, onehot, values, text, name, dtype):
    """A TensorField of the group's columns in order: values' columns (the group's numeric columns, in
    order) and one-hot blocks of text(column) for the --onehot ones; `categories` names the blocks'."""
    parts, categories, k = [], {}, 0
    for c in group:
        if c in onehot:
            block, categories[name(c)] = one_hot(text(c), dtype)
            parts.append(block)
        else:
            parts.append(values[:, k:k + 1])
            k += 1
    return TensorField(label, torch.cat(parts, 1) if len(parts) > 1 else parts[0], categories=categories or None,
                       columns=[str(name(c)) for c in group])


def _csv_target(table, column, options):
    cells, lines = table.text(column)
    place = lambda row: csvfile.cell_place(table.path, lines[row], row + 1, column, table.names)  # noqa: E731
    values, classes = target_values(cells, options.target_dtype, options.dtype, place)
    return TensorField(table.name(column), values, classes=classes)


def target_values(cells, target_dtype, dtype, place):
    """(tensor, classes or None) of a target column's text cells; place(row) names a cell's row and column."""
    numbers = [_number(c) for c in cells]
    missing = [k for k, n in enumerate(numbers) if n is None]
    if cells and len(missing) == len(cells):  # no cell is a number: class names
        empty = next((k for k, c in enumerate(cells) if not c), None)
        if empty is not None:
            raise _bad_label(place(empty), "", "a class name")
        return class_indices(cells, target_dtype)
    first_text = next((k for k in missing if cells[k]), None)
    if first_text is not None:
        raise _bad_label(place(first_text), cells[first_text], "a number")
    integers = not missing and all(isinstance(n, int) for n in numbers)
    want = target_dtype or (torch.int64 if integers else dtype or torch.float32)
    if not (want.is_floating_point or want.is_complex):
        fraction = next((k for k, n in enumerate(numbers) if not isinstance(n, int)), None)
        if fraction is not None:
            raise _bad_label(place(fraction), cells[fraction], "an integer")
        return torch.tensor(numbers, dtype=torch.int64).to(want), None
    return torch.tensor([float("nan") if n is None else float(n) for n in numbers], dtype=torch.float64).to(want), None


def _bad_label(place, cell, what):
    if not cell:
        return TorchshError("file_error", "%s is empty" % place, "every row needs %s" % what)
    return TorchshError("file_error", "%s: %r is not %s" % (place, cell, what),
                        "a label column holds numbers only, or names only (class names)")


def class_indices(cells, target_dtype=None):
    """(class index of each cell, classes): the classes are the sorted names, as ImageFolder's folders."""
    classes = sorted(set(cells))
    index = {name: k for k, name in enumerate(classes)}
    return torch.tensor([index[c] for c in cells], dtype=torch.int64).to(target_dtype or torch.int64), classes


def _number(cell):
    """int or float of a cell, None when it is empty or no number."""
    if _INTEGER.fullmatch(cell):
        return int(cell)
    try:
        return float(cell) if cell and "_" not in cell else None
    except ValueError:
        return None


def one_hot(cells, dtype):
    """(rows × categories 0/1 tensor, categories): one column per category, the categories sorted."""
    codes, categories = class_indices(cells)
    return torch.nn.functional.one_hot(codes, len(categories)).to(dtype), categories


def text_feature(path, name):
    return bad_argument("%s column %r holds text, not numbers: a feature must be numbers" % (path, name),
                        "--onehot %s encodes it as one 0/1 column per category; --target %s makes it the "
                        "class label; or leave it out with --columns" % (name, name))


def onehot_groups(options):
    given = options.onehot if isinstance(options.onehot, list) else [options.onehot] if options.onehot else []
    return [column_group(g) for g in given]


def check_onehot(onehot, groups, column_name, path):
    chosen = {i for g in groups for i in g}
    outside = sorted(onehot - chosen)
    if outside:
        raise bad_argument("--onehot %s: %s has no such feature column" % (column_name(outside[0]), path),
                           "--onehot names a feature column (one of --columns, or any but --target)")


def named_groups(names, options, where):
    """(target, onehot columns, [feature column groups]) of `data open`'s flags over a table's column NAMES (a
    Parquet file's, a stream's schema); WHERE names the table in errors."""
    resolve = lambda group: [parquetfile.column_name(c, names, where) for c in group]  # noqa: E731
    target = resolve([options.target])[0] if options.target else None
    onehot = {c for g in onehot_groups(options) for c in resolve(g)}
    if options.columns is None:
        groups = [[n for n in names if n != target]]
    else:
        groups = [resolve(column_group(g)) for g in (options.columns if isinstance(options.columns, list)
                                                    else [options.columns])]
    check_onehot(onehot, groups, str, where)
    return target, onehot, groups


def parquet_fields(path, options):
    """The fields of a .parquet file under `data open`'s flags."""
    types = parquetfile.column_types(path)
    target, onehot, groups = named_groups(list(types), options, path)
    fields = []
    for group in groups:
        for c in group:
            if parquetfile.is_text(types[c]) and c not in onehot:
                raise text_feature(path, c)
        fields.append(_parquet_features(path, group, onehot, options.dtype or torch.float32))
    if target:
        fields.append(_parquet_target(path, target, types[target], options.target_dtype))
    return fields


def _parquet_features(path, group, onehot, dtype):
    numeric = [c for c in group if c not in onehot]
    values = parquetfile.read(path, [numeric], dtype)[0].reshape(-1, len(numeric)) if numeric else None
    return _assemble(",".join(group), group, onehot, values, lambda c: parquetfile.text_column(path, c), str, dtype)


def _parquet_target(path, column, type_text, target_dtype):
    if not parquetfile.is_text(type_text):
        return TensorField(column, parquetfile.read(path, [[column]], target_dtype)[0])
    values, classes = class_indices(parquetfile.text_column(path, column), target_dtype)
    return TensorField(column, values, classes=classes)
