"""A table read by pieces (Parquet row groups, Arrow record batches) as the fields of `torch data open`: the items
data/tables.py makes of a whole table, value for value and bit for bit, with no row held at open.

A PieceTable is one set of files (parquetstream.ParquetSet, arrowfiles.ArrowSet): `files`, `schema` (pyarrow),
`piece_rows`, `read(k, columns)` -> a pyarrow Table of piece k, `place(k)` naming it ("x.parquet row group 3"),
and `info()`. open_fields() plans the fields from `data open`'s flags (tables.py's rules: features float32 or
--dtype [k], --onehot blocks, the target int64 / class indices / as stored); a TableSource converts a piece
into every field's tensor at once and keeps it in its PieceCache; a PieceField is one field's view of it.
Text targets and --onehot columns cost one pass over that column only, piece by piece (the sorted names).
"""
import bisect
from dataclasses import dataclass, field as dataclass_field

import numpy as np
import torch

from torchsh.data.pieces import PieceCache
from torchsh.data.tables import named_groups, text_feature
from torchsh.errors import TorchshError
from torchsh.formats.parquetfile import is_text


@dataclass
class Plan:
    """One field: its columns (features: numeric ones stacked, --onehot ones as 0/1 blocks) or one target."""
    name: str
    columns: list
    dtype: torch.dtype
    onehot: dict = dataclass_field(default_factory=dict)   # column -> its sorted categories
    target: bool = False
    classes: list = None                                   # a text target's sorted names

    @property
    def width(self):
        return sum(len(self.onehot[c]) if c in self.onehot else 1 for c in self.columns)

    def convert(self, table, place):
        if self.target:
            return _target_tensor(table.column(self.columns[0]), self, place)
        parts, numeric = [], [c for c in self.columns if c not in self.onehot]
        values = _stacked(table, numeric, place).to(self.dtype).reshape(-1, len(numeric)) if numeric else None
        k = 0
        for c in self.columns:
            if c in self.onehot:
                codes = _codes(table.column(c), self.onehot[c])
                parts.append(torch.nn.functional.one_hot(codes, len(self.onehot[c])).to(self.dtype))
            else:
                parts.append(values[:, k:k + 1])
                k += 1
        return torch.cat(parts, 1) if len(parts) > 1 else parts[0]


def _stacked(table, columns, place):
    """The columns side by side as formats/parquetfile.read stacks a whole table (numpy's promotion, then
    one cast): the same bits from a piece as from the whole file."""
    arrays = []
    for c in columns:
        a = table.column(c).to_numpy()
        if a.dtype.kind not in "biuf":
            raise TorchshError("file_error", "%s: column %r holds %s, not numbers" % (place, c,
                                                                                   table.schema.field(c).type))
        arrays.append(a)
    return torch.from_numpy(np.array(arrays[0] if len(arrays) == 1 else np.column_stack(arrays)))


def _target_tensor(column, plan, place):
    if plan.classes is not None:
        return _codes(column, plan.classes).to(plan.dtype)
    values = column.to_numpy()
    t = torch.from_numpy(np.array(values))
    if t.dtype != plan.dtype and not (plan.dtype.is_floating_point and values.dtype.kind == "f"):
        raise TorchshError("file_error", "%s: column %r has an empty cell (null): an integer target needs every "
                           "value" % (place, plan.columns[0]), "--target_dtype float32 reads it as NaN")
    return t.to(plan.dtype)


def pyarrow():
    """The pyarrow module (with .parquet, .ipc, .compute), or missing_extra naming the extra."""
    try:
        import pyarrow
        import pyarrow.compute  # noqa: F401
        import pyarrow.ipc  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise TorchshError("missing_extra", "reading .parquet and .arrow files needs pyarrow",
                           "pip install 'torchsh[parquet]'") from None
    return pyarrow


def _text(column):
    return column.cast(pyarrow().large_string())


def _codes(column, names):
    """Each cell's index in NAMES (sorted), int64."""
    pa = pyarrow()
    codes = pa.compute.index_in(_text(column), value_set=pa.array(names, pa.large_string()))
    return torch.from_numpy(codes.to_numpy(zero_copy_only=False).astype(np.int64))


def names_of(pieces, column, starts):
    """The sorted distinct values of a text column, one piece at a time; an empty cell is refused by row."""
    pc = pyarrow().compute
    seen = set()
    for k in range(len(pieces.piece_rows)):
        values = _text(pieces.read(k, [column]).column(column))
        if values.null_count:
            row = pc.index(pc.is_null(values), True).as_py()
            raise TorchshError("file_error", "%s, row %d of the set: column %r is empty" % (pieces.place(k),
                               int(starts[k]) + row + 1, column), "every label and category needs a value")
        seen.update(pc.unique(values).to_pylist())
    return sorted(seen)


def plan_fields(pieces, options, where):
    """[Plan] of `data open`'s flags over the table's schema, as tables.parquet_fields reads them."""
    types = {f.name: str(f.type) for f in pieces.schema}
    target, onehot, groups = named_groups(list(types), options, where)
    starts = starts_of(pieces.piece_rows)
    plans = []
    for group in groups:
        for c in group:
            if is_text(types[c]) and c not in onehot:
                raise text_feature(where, c)
        plans.append(Plan(",".join(group), group, options.dtype or torch.float32,
                          {c: names_of(pieces, c, starts) for c in group if c in onehot}))
    if target:
        plans.append(_target_plan(pieces, target, types[target], options.target_dtype, starts))
    return plans


def _target_plan(pieces, column, type_text, target_dtype, starts):
    if is_text(type_text):
        return Plan(column, [column], target_dtype or torch.int64, target=True,
                    classes=names_of(pieces, column, starts))
    stored = torch.from_numpy(np.empty(0, pieces.schema.field(column).type.to_pandas_dtype())).dtype
    return Plan(column, [column], target_dtype or stored, target=True)


def starts_of(piece_rows):
    return torch.cumsum(torch.tensor([0] + list(piece_rows), dtype=torch.int64), 0)


class TableSource:
    """The pieces of one PieceTable converted into every planned field's tensor at once, kept in a PieceCache
    (per process: pickling drops it, and the PieceTable drops its open files)."""

    def __init__(self, pieces, plans):
        self.pieces, self.plans = pieces, plans
        self.columns = sorted({c for p in plans for c in p.columns})
        bounds = starts_of(pieces.piece_rows)
        self.starts, self.length = bounds[:-1].clone(), int(bounds[-1])
        # a copy, not a view: pickled for a worker, the tensor moves to shared memory and frees what a view reads
        self.starts_list = self.starts.numpy().copy()
        self.largest = max(pieces.piece_rows, default=0)  # two pieces cached: a read in order crosses into the next;
        self.piece_cache = PieceCache(2 * self.largest * self.row_bytes())  # a loader's window grows it (reserve)

    def row_bytes(self, plans=None):
        """Bytes one row costs in the cache (every field, or PLANS')."""
        return sum(p.width * p.dtype.itemsize if not p.target else p.dtype.itemsize for p in plans or self.plans)

    def piece(self, k):
        """(tensor of each field) of piece k, from the cache or read now."""
        return self.piece_cache.get(k, lambda: self._convert(k))

    def _convert(self, k):
        place = self.pieces.place(k)
        table = self.pieces.read(k, self.columns)
        tensors = tuple(p.convert(table, place).contiguous() for p in self.plans)
        return tensors, sum(t.numel() * t.element_size() for t in tensors)

    def rows(self, f, index):
        """Field f's rows at index (a slice, or an int64 tensor of indices; negative counts from the end),
        stacked, contiguous and owned: never a view of the cache. Index arithmetic in numpy: a batch costs
        one gather per piece it touches."""
        if isinstance(index, slice):
            start, stop, step = index.indices(self.length)
            if step == 1:
                return self._span(f, start, max(start, stop))
            index = torch.arange(start, stop, step)
        index = torch.as_tensor(index, dtype=torch.int64).numpy()
        index = np.where(index < 0, index + self.length, index)
        if len(index) and (index.min() < 0 or index.max() >= self.length):
            raise IndexError("an index is out of range for a dataset of length %d" % self.length)
        piece_of = np.searchsorted(self.starts_list, index, side="right") - 1
        if len(index) and piece_of[0] == piece_of[-1] and (piece_of == piece_of[0]).all():
            k = int(piece_of[0])
            return self.piece(k)[f][torch.from_numpy(index - int(self.starts_list[k]))]
        out = self._empty(f, len(index))
        for k in np.unique(piece_of).tolist():
            where = np.flatnonzero(piece_of == k)
            out[torch.from_numpy(where)] = self.piece(k)[f][torch.from_numpy(index[where] - int(self.starts_list[k]))]
        return out

    def _span(self, f, start, stop):
        """Rows [start, stop) of field f: a slice of each piece they cross, copied once."""
        first = bisect.bisect_right(self.starts_list, start) - 1
        parts = []
        for k in range(max(first, 0), len(self.starts_list)):
            if self.starts_list[k] >= stop:
                break
            base = int(self.starts_list[k])
            parts.append(self.piece(k)[f][max(start - base, 0):stop - base])
        if not parts:
            return self._empty(f, 0)
        return parts[0].clone() if len(parts) == 1 else torch.cat(parts)

    def _empty(self, f, n):
        plan = self.plans[f]
        return torch.empty((n,) + (() if plan.target else (plan.width,)), dtype=plan.dtype)


class PieceField:
    """One field of a TableSource: the interface every piece-backed field has (data/pieces.py)."""

    def __init__(self, source, f, first):
        self.source, self.f, plan = source, f, source.plans[f]
        self.name, self.classes = plan.name, plan.classes
        self.categories = dict(plan.onehot) or None
        self.columns = None if plan.target else list(plan.columns)
        self.mapped_bytes = source.pieces.mapped_bytes if first else 0  # the files once, not once per field

    def __len__(self):
        return self.source.length

    @property
    def piece_starts(self):
        return self.source.starts

    @property
    def piece_cache(self):
        return self.source.piece_cache

    def bytes_for(self, rows, largest_piece=False):
        """What ROWS rows of this field (and its largest piece, if asked) take in the cache."""
        count = rows + (self.source.largest if largest_piece else 0)
        return count * self.source.row_bytes([self.source.plans[self.f]])

    def item(self, i):
        return self.rows(torch.tensor([i]))[0]

    def rows(self, index):
        return self.source.rows(self.f, index)

    def items(self, indices):
        return self.rows(torch.as_tensor(indices, dtype=torch.int64)).unbind(0)

    def held_tensors(self):
        return []

    def info(self):
        return self.source.pieces.info()


def open_fields(pieces, options, where):
    """[PieceField] of a PieceTable under `data open`'s flags."""
    source = TableSource(pieces, plan_fields(pieces, options, where))
    return [PieceField(source, f, f == 0) for f in range(len(source.plans))]


def same_schema(first, schema, first_path, path):
    """SCHEMA (without its metadata) when FIRST is None or equal to it; else file_error naming both files and the
    first column where they differ."""
    schema = schema.remove_metadata()
    if first is not None and (difference := schema_difference(first, schema)) is not None:
        raise TorchshError("file_error", "%s and %s have different schemas (%s)" % (first_path, path, difference),
                           "every file of a set needs the same columns, in the same order, of the same types")
    return schema


def schema_difference(first, other):
    """The first column where two pyarrow schemas differ, as text ('y: int64 vs string'), or None."""
    a, b = list(first), list(other)
    for k in range(max(len(a), len(b))):
        x, y = (a[k] if k < len(a) else None), (b[k] if k < len(b) else None)
        if x is None or y is None or x.name != y.name or not x.type.equals(y.type):
            show = lambda f: "(none)" if f is None else "%s: %s" % (f.name, f.type)  # noqa: E731
            return "column %d %s vs %s" % (k, show(x), show(y))
    return None
