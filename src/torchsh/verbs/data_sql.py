"""`torch data sql QUERY`: a DuckDB query's result as a dataset (data/sql.py), items as `data open` gives a
Parquet table's."""
from torchsh.data import openers, sql
from torchsh.history import datasets as history_data
from torchsh.verbs import verb


@verb("data.sql(str query, *, str? columns=None, str? target=None, ScalarType? dtype=None, "
      "ScalarType? target_dtype=None) -> Dataset",
      category="files", repeatable=("columns",), form=history_data.as_values, no_form=history_data.QUERIED,
      examples=("printf 'x1,x2,y\\n1,2,0\\n3,4,1\\n5,6,1\\n' > t.csv && torch data info "
                "$(torch data sql \"SELECT * FROM 't.csv' WHERE x1 > 1\" --target y)",), read_only=True)
def sql_(ctx, query, columns=None, target=None, dtype=None, target_dtype=None):
    """The rows a DuckDB query returns, as a dataset (the `sql` extra): --columns and --target as `data open`
    reads a Parquet table (features float32 or --dtype, each item [k]; the target int64, class indices of
    names, or float).

    One SELECT (or FROM …) query, in DuckDB's SQL: `SELECT * EXCLUDE (id) FROM 'logs/*.parquet' WHERE day >=
    '2026-11-01'`. Relative paths are read from the current folder; it reads local files only (DuckDB's
    extensions are never installed or loaded: no http:// or s3://) and changes nothing (INSTALL, ATTACH, COPY,
    SET… are refused). DuckDB's memory is a share of what the daemon's budget has left. The result is written
    to a Parquet file in the daemon's private scratch folder (removed when the dataset is freed) and read from
    there row group by row group.

    Args:
        query: one SELECT query; 'file.parquet', 'logs/*.parquet', 'table.csv' name files
        columns: the result's columns by name or 0-based index, x1,x2; repeat for more fields
        target: the column put last; alone, every other column is a feature
        dtype: the features' dtype (default float32)
        target_dtype: the target's dtype (default: int64 for integers, class indices for names, else --dtype)
    """
    ctx.noted = {"cwd": ctx.cwd}  # the query's relative paths, for the history log
    options = openers.Options(columns, target, dtype, target_dtype)
    return sql.open_query(query, ctx.cwd, options, getattr(ctx.app, "memory", None))
