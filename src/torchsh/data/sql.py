"""`torch data sql QUERY`: a DuckDB query's result as a dataset (the `sql` extra), read as a Parquet stream.

The query runs in a connection of its own, set up so that nothing it says reaches the network or changes the
connection: one SELECT statement only (INSTALL, LOAD, ATTACH, COPY, SET… are refused by their type, from
DuckDB's own parser); extensions are never installed nor loaded (autoinstall and autoload off, community
extensions off, an empty extension folder of our own), so `http://`, `s3://` and the like fail there; the
configuration is locked once set. Relative paths are read from the caller's cwd (file_search_path: the daemon
never changes its own cwd), DuckDB's memory is a share of the room the daemon's budget leaves, and it spills to
the daemon's private scratch folder.

The result is written by DuckDB's COPY … TO (relation.write_parquet: the query is never spliced into other SQL
text), Parquet in row groups of 65,536 rows, fsync'd, into the daemon's private
scratch folder (scratchfiles.py: made 0700 by mkdtemp for this daemon process, so no file a former daemon or
another user left there is ever read) and opened as a Parquet stream (parquetstream.py: row groups read on
demand) under `data open`'s rules (the features float32 or --dtype, the target int64, class indices or float).
The file is removed once the dataset is freed.
"""
import os

from torchsh import trust
from torchsh.data import parquetstream, scratchfiles
from torchsh.data.datasets import FileDataset
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats.flags import column_group
from torchsh.memory import budget as memory_budget

ROW_GROUP_ROWS = 65536
THREADS = 2            # a query shares the machine with the daemon's other work
MEMORY_SHARE = 2       # DuckDB may use 1/MEMORY_SHARE of the room the budget leaves
MEMORY_LEAST = 64 << 20
LOCAL_HINT = ("data sql reads local files only: DuckDB's extensions (httpfs…) are never installed or loaded; "
              "download the file first (curl -O URL), then query it by its path")


def open_query(query, cwd, options, budget=None):
    """A FileDataset of QUERY's result (relative paths from CWD), under `data open`'s --columns/--target rules."""
    duckdb = _duckdb()
    path = scratchfiles.new_path(".parquet")
    try:
        connection = _connect(duckdb, cwd, budget)
        try:
            relation = _run(duckdb, connection, query)
            _check_columns(relation.columns, options)
            _write(duckdb, relation, path)
        finally:
            connection.close()
        fields = parquetstream.open_fields([path], options)
    except BaseException:
        _remove(path)
        raise
    # the fields share one source (piecetables.TableSource) that reads the file: it goes when the last field goes,
    # whichever dataset (this one, a transform's, a split's) holds them
    scratchfiles.remove_when_freed(fields[0].source, path)
    fields[0].source.query = (query, cwd, options)  # what rebuilds it in another daemon (recipes/streams.py)
    return FileDataset(fields)


def _duckdb():
    try:
        import duckdb
    except ImportError:
        raise TorchshError("missing_extra", "torch data sql needs DuckDB, which is not installed",
                           "pip install 'torchsh[sql]'") from None
    return duckdb


def _connect(duckdb, cwd, budget):
    """A private in-memory connection, offline and bounded, its configuration locked."""
    spill = os.path.join(scratchfiles.folder(), "duckdb")
    os.makedirs(os.path.join(spill, "extensions"), mode=0o700, exist_ok=True)
    config = {"file_search_path": cwd, "autoinstall_known_extensions": False, "autoload_known_extensions": False,
              "allow_community_extensions": False, "extension_directory": os.path.join(spill, "extensions"),
              "temp_directory": spill, "threads": min(THREADS, os.cpu_count() or 1)}
    limit = memory_limit(budget)
    if limit is not None:
        config["memory_limit"] = "%dB" % limit
    try:
        connection = duckdb.connect(":memory:", config=config)
        connection.execute("SET lock_configuration = true")
    except duckdb.Error as e:
        raise TorchshError("internal_error", "DuckDB refused its set-up: %s" % one_line(e)) from None
    return connection


def memory_limit(budget):
    """DuckDB's memory in bytes: a share of what the daemon's budget has left (None: no budget, DuckDB's own)."""
    if budget is None or budget.limit is None:
        return None
    room = budget.limit - memory_budget.rss_bytes()
    return max(MEMORY_LEAST, room // MEMORY_SHARE)


def _run(duckdb, connection, query):
    """The relation of QUERY, once DuckDB's parser finds it one SELECT statement."""
    try:
        statements = connection.extract_statements(query)
    except duckdb.Error as e:
        raise sql_error(duckdb, e) from None
    if len(statements) != 1:
        raise bad_argument("data sql runs one query, and %d statements were given" % len(statements),
                           "give one SELECT (or FROM …) query, without ';' between statements")
    kind = str(statements[0].type).rsplit(".", 1)[-1]
    if kind == "LOAD":
        raise bad_argument("data sql never installs or loads DuckDB extensions", LOCAL_HINT)
    if kind != "SELECT":
        raise bad_argument("data sql runs a SELECT query, not a %s statement" % kind,
                           "it reads; write files with `torch save`, and query them here")
    try:
        return connection.sql(query)
    except duckdb.Error as e:
        raise sql_error(duckdb, e) from None


def _check_columns(columns, options):
    """Refuse a result without columns, or --target/--columns naming a column it lacks, naming what it has."""
    if not columns:
        raise bad_argument("the query returns no columns", "SELECT the columns the dataset is made of")
    named = [options.target] if options.target is not None else []
    groups = options.columns if isinstance(options.columns, list) else [options.columns] if options.columns else []
    named += [c for g in groups for c in column_group(g) if not c.isdigit()]
    for name in named:
        if name not in columns:
            raise bad_argument("the query's result has no column %r" % name, "its columns: %s" % " ".join(columns))


def _write(duckdb, relation, path):
    """The result as Parquet at PATH (row groups of ROW_GROUP_ROWS), durable, and ours."""
    try:
        relation.write_parquet(path, row_group_size=ROW_GROUP_ROWS)
    except duckdb.Error as e:
        raise sql_error(duckdb, e) from None
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)  # the dataset reads it for as long as it lives
        why = trust.untrusted(path, trust.S_IFREG, os.fstat(fd))
    finally:
        os.close(fd)
    if why:
        raise TorchshError("untrusted", "the query's result file: " + why, trust.UNTRUSTED_HINT)


def sql_error(duckdb, e):
    """DuckDB's error on one line, with the code that says whose it is."""
    message = one_line(e)
    if "requires the extension" in message or "httpfs" in message:
        return bad_argument("data sql reads no URL: %s" % message.split(" Please ")[0], LOCAL_HINT)
    if isinstance(e, duckdb.OutOfMemoryException):
        return TorchshError("out_of_memory", "the query ran out of its memory: %s" % message,
                            "DuckDB gets a share of the daemon's budget (TORCHSH_MAX_MEMORY); free objects or "
                            "narrow the query")
    if isinstance(e, duckdb.IOException):
        return TorchshError("file_error", "the query cannot read a file: %s" % message,
                            "relative paths are read from the current folder")
    return bad_argument("the query failed: %s" % message,
                        "DuckDB's SQL (duckdb.org/docs/sql); relative paths are read from the current folder")


def one_line(e):
    return " ".join(str(e).split())[:500] or type(e).__name__


def _remove(path):
    try:
        os.unlink(path)
    except OSError:  # never written
        pass
