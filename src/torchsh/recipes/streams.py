"""Recipes of a FileDataset's piece-backed fields (issue 40's streams): what rebuilds them in a new daemon.

A table field (a Parquet set opened with --stream, Arrow files, a `datasets` folder: data/piecetables.py) is its
files, their format, the stamps the opener took (Parquet: size and mtime; Arrow: size) and its field's plan
(columns, dtype, target, classes, --onehot categories): rebuilt, the files are opened again by the same set class
`data open` uses (ParquetSet, ArrowSet: footers read, schemas compared) and a file changed since is refused as the
opener refuses it; the plan is the one saved, so a text target's classes cost no pass over the column again.

A `data sql` result lives in the daemon's private scratch folder, removed with the daemon: its recipe is the
query, the cwd it ran in and `data open`'s flags; rebuilt, the query runs again there (DuckDB's memory is then its
own default: no budget reaches a recipe). Rows and plans (classes, categories) must come out as saved, or the
rebuild is a file_error: the files it read changed, and a loader's saved position would point at other rows.

A tar shard field (data/tarshards.py) is its shards, their stamps when saved and the fields' extensions in order;
rebuilt, the shards are indexed again. Fields sharing one source (a table's, a tar index) share it again.

Chat lines and token files travel as their values (VALUES_TYPES): a chat item is tokenized when read, by a
language model that is not saved, and a token file lives in the daemon's private folder; so their items are
read once, whole, and rebuilt in memory (a TensorField), as these datasets were held before they streamed: a
session, `torch cp` and `fit --nproc_per_node`'s ranks get the same items.
"""
import json
import os

from torchsh.data import openers, sql, tarshards
from torchsh.data.arrowfiles import ArrowSet
from torchsh.data.chat import ChatColumn
from torchsh.data.parquetstream import ParquetSet
from torchsh.data.piecetables import PieceField, Plan, TableSource
from torchsh.data.tokenfile import DocumentRows, TokenWindows
from torchsh.errors import TorchshError
from torchsh.recipes.base import not_portable
from torchsh.vocab import DTYPES, dtype_name

_CHANGED_HINT = "`torch data open` it again"
VALUES_TYPES = (ChatColumn, TokenWindows, DocumentRows)  # fields saved as their values, rebuilt in memory


def values(f):
    """All of field F's rows, stacked (a VALUES_TYPES field's state)."""
    return f.rows(slice(0, len(f)))


def capture_field(f):
    """The JSON of piece-backed field F, or not_portable saying why it has none."""
    if isinstance(f, PieceField):
        return _capture_table(f)
    if isinstance(f, tarshards.TarField):
        return _capture_tar(f)
    if isinstance(f, VALUES_TYPES):  # rebuilt as a TensorField, its values in the state (recipes/datasets.py)
        item = f.rows(slice(0, 1))
        return {"type": "tensor", "name": f.name, "shape": [len(f)] + list(item.shape[1:]),
                "dtype": dtype_name(item.dtype)}
    raise not_portable("a dataset field of type %s has no recipe" % type(f).__name__)


def build_field(j, shared):
    """The field J describes; SHARED (one dict per dataset rebuilt) keeps the sources its fields share."""
    key = json.dumps({k: v for k, v in j.items() if k not in ("name", "field")}, sort_keys=True)
    if key not in shared:
        shared[key] = _BUILDS[j["type"]](j)
    return shared[key][j["field"]]


def _plan_json(p):
    return {"name": p.name, "columns": list(p.columns), "dtype": dtype_name(p.dtype), "onehot": dict(p.onehot),
            "target": p.target, "classes": list(p.classes) if p.classes is not None else None}


def _plan(j):
    return Plan(j["name"], j["columns"], DTYPES[j["dtype"]], dict(j["onehot"]), j["target"], j["classes"])


def _capture_table(f):
    source = f.source
    out = {"name": f.name, "field": f.f, "plans": [_plan_json(p) for p in source.plans]}
    query = getattr(source, "query", None)
    if query is not None:  # data sql: its file goes with this daemon; the query is what rebuilds it
        text, cwd, options = query
        return dict(out, type="sql", query=text, cwd=cwd, rows=source.length, options={
            "columns": options.columns, "target": options.target,
            "dtype": dtype_name(options.dtype) if options.dtype else None,
            "target_dtype": dtype_name(options.target_dtype) if options.target_dtype else None})
    pieces = source.pieces
    if isinstance(pieces, ParquetSet):
        return dict(out, type="table", format="parquet", files=list(pieces.files),
                    stamps=[list(s) for s in pieces.stamps])
    if isinstance(pieces, ArrowSet):
        return dict(out, type="table", format="arrow", files=list(pieces.files), stamps=list(pieces.sizes))
    raise not_portable("a table read from %s has no recipe" % type(pieces).__name__)


def _build_table(j):
    """The fields of a Parquet or Arrow set opened again, its files as they were, under the saved plans."""
    if j["format"] == "parquet":
        pieces = ParquetSet(j["files"])
        now = [list(s) for s in pieces.stamps]
    else:
        pieces = ArrowSet(j["files"])
        now = list(pieces.sizes)
    for path, then, stamp in zip(j["files"], j["stamps"], now):
        if then != stamp:
            raise TorchshError("file_error", "%s changed after the dataset was opened" % path, _CHANGED_HINT)
    source = TableSource(pieces, [_plan(p) for p in j["plans"]])
    return [PieceField(source, f, f == 0) for f in range(len(source.plans))]


def _build_sql(j):
    """The query run again in its cwd; refused when its result is not the one saved (rows, classes, categories)."""
    o = j["options"]
    options = openers.Options(o["columns"], o["target"], o["dtype"] and DTYPES[o["dtype"]],
                              o["target_dtype"] and DTYPES[o["target_dtype"]])
    fields = sql.open_query(j["query"], j["cwd"], options).fields
    source = fields[0].source
    plans = [_plan_json(p) for p in source.plans]
    if source.length != j["rows"] or plans != j["plans"]:
        raise TorchshError("file_error", "the query's result changed since it was saved (%d rows then, %d now%s): "
                           "the files it reads in %s changed" % (j["rows"], source.length,
                                                                 "" if plans == j["plans"] else ", other columns or "
                                                                 "classes", j["cwd"]),
                           "run `torch data sql` again, and build its loader again")
    return fields


def _capture_tar(f):
    index = f.index
    return {"type": "tar", "name": f.name, "field": list(index.fields).index(f.name), "shards": list(index.paths),
            "stamps": [_stamp(p) for p in index.paths], "fields": list(index.fields)}


def _stamp(path):
    try:
        st = os.stat(path)
    except OSError as e:
        raise not_portable("the shard %s cannot be read now: %s" % (path, e.strerror or e)) from None
    return [st.st_size, st.st_mtime_ns]


def _build_tar(j):
    """The shards indexed again, the same extensions in the same order (the last one as the target)."""
    for path, then in zip(j["shards"], j["stamps"]):
        try:
            now = _stamp(path)
        except TorchshError:
            raise TorchshError("file_error", "the shard %s is gone" % path, _CHANGED_HINT) from None
        if now != then:
            raise TorchshError("file_error", "%s changed after the dataset was opened" % path, _CHANGED_HINT)
    names = j["fields"]
    return tarshards.tar_fields(j["shards"], openers.Options(columns=[[n] for n in names[:-1]], target=names[-1]))


_BUILDS = {"table": _build_table, "sql": _build_sql, "tar": _build_tar}
STREAM_TYPES = tuple(_BUILDS)
