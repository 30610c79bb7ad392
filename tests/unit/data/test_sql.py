"""data/sql.py: a DuckDB query's rows as `data open` reads a Parquet table, held to the rows pyarrow reads from
the files directly (the oracle); relative paths from the caller's cwd; nothing but one SELECT runs, nothing
reaches the network; the result's file goes with the dataset; errors name the columns the result has."""
import gc
import os
import sys

import numpy as np
import pytest
import torch

from torchsh.data import scratchfiles, sql
from torchsh.data.openers import Options
from torchsh.errors import TorchshError
from torchsh.memory.budget import Budget

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")


def write_logs(folder, files=3, rows=50):
    """logs/part-K.parquet with id, day (text), a, b (float64), y (int64), kind (text): the rows in file order."""
    os.makedirs(os.path.join(folder, "logs"), exist_ok=True)
    rng, tables = np.random.default_rng(0), []
    for k in range(files):
        n = np.arange(k * rows, (k + 1) * rows)
        table = pa.table({"id": n, "day": ["2026-%02d-01" % (10 + i % 3) for i in n],
                          "a": rng.standard_normal(rows), "b": rng.standard_normal(rows), "y": n % 4,
                          "kind": [("cat", "dog", "emu")[i % 3] for i in n]})
        pq.write_table(table, os.path.join(folder, "logs", "part-%d.parquet" % k))
        tables.append(table)
    return pa.concat_tables(tables)


def _rows(dataset):
    return [dataset[i] for i in range(len(dataset))]


def test_items_are_the_rows_the_files_hold_filtered_as_the_query_says(tmp_path):
    every = write_logs(str(tmp_path)).to_pydict()
    d = sql.open_query("SELECT * EXCLUDE (id, day, kind) FROM 'logs/*.parquet' WHERE day >= '2026-11-01' ORDER BY id",
                       str(tmp_path), Options(target="y"))
    kept = [i for i, day in enumerate(every["day"]) if day >= "2026-11-01"]
    want_x = torch.tensor([[every["a"][i], every["b"][i]] for i in kept], dtype=torch.float64).float()
    want_y = torch.tensor([every["y"][i] for i in kept], dtype=torch.int64)
    got = _rows(d)
    assert len(d) == len(kept) and d.field_names == ["a,b", "y"]
    assert torch.equal(torch.stack([x for x, _ in got]), want_x)
    assert torch.equal(torch.stack([y for _, y in got]), want_y)


def test_columns_and_a_text_target_read_as_a_parquet_table_does(tmp_path):
    every = write_logs(str(tmp_path), files=1).to_pydict()
    d = sql.open_query("FROM 'logs/part-0.parquet'", str(tmp_path), Options(columns="b", target="kind",
                                                                             dtype=torch.float64))
    assert d.classes == ["cat", "dog", "emu"] and len(d) == len(every["id"])
    assert torch.equal(d[7][0], torch.tensor([every["b"][7]], dtype=torch.float64))
    assert int(d[7][1]) == ["cat", "dog", "emu"].index(every["kind"][7])


def test_the_result_file_is_removed_when_the_dataset_is_freed(tmp_path):
    write_logs(str(tmp_path), files=1)
    before = set(os.listdir(scratchfiles.folder()))
    d = sql.open_query("SELECT a, y FROM 'logs/part-0.parquet'", str(tmp_path), Options(target="y"))
    made = [f for f in set(os.listdir(scratchfiles.folder())) - before if f.endswith(".parquet")]
    assert len(made) == 1 and oct(os.stat(scratchfiles.folder()).st_mode & 0o777) == "0o700"
    del d
    gc.collect()
    assert not os.path.exists(os.path.join(scratchfiles.folder(), made[0]))


@pytest.mark.parametrize("query", ["SELECT * FROM 'http://127.0.0.1:9/x.parquet'",
                                   "SELECT * FROM read_parquet('s3://bucket/x.parquet')"])
def test_a_url_is_refused_because_no_extension_is_ever_loaded(tmp_path, query):
    with pytest.raises(duckdb.Error, match="httpfs"):  # DuckDB itself, set up as data sql sets it up, refuses it
        sql._connect(duckdb, str(tmp_path), None).sql(query).fetchall()
    with pytest.raises(TorchshError) as e:
        sql.open_query(query, str(tmp_path), Options())
    assert e.value.code == "bad_argument" and "reads no URL" in e.value.message and "never installed" in e.value.hint


@pytest.mark.parametrize("query,words", [("INSTALL httpfs", "never installs"), ("LOAD httpfs", "never installs"),
                                         ("COPY (SELECT 1 AS a) TO 'out.csv'", "not a COPY"),
                                         ("ATTACH 'x.db'", "not a ATTACH"), ("SET threads = 64", "not a SET"),
                                         ("SELECT 1 AS a; SELECT 2 AS b", "one query")])
def test_only_one_select_runs_and_nothing_is_installed_or_written(tmp_path, query, words):
    with pytest.raises(TorchshError) as e:
        sql.open_query(query, str(tmp_path), Options())
    assert e.value.code == "bad_argument" and words in e.value.message and os.listdir(tmp_path) == []
    assert os.listdir(os.path.join(scratchfiles.folder(), "duckdb", "extensions")) == []


def test_a_target_the_result_lacks_names_the_columns_it_has(tmp_path):
    write_logs(str(tmp_path), files=1)
    for options in (Options(target="label"), Options(columns="a,nope")):
        with pytest.raises(TorchshError) as e:
            sql.open_query("SELECT a, b FROM 'logs/*.parquet'", str(tmp_path), options)
        assert e.value.code == "bad_argument" and e.value.hint == "its columns: a b"


def test_sql_errors_are_one_line_with_their_code(tmp_path):
    cases = [("SELEC 1", "bad_argument"), ("SELECT nope FROM range(3)", "bad_argument"),
             ("SELECT * FROM 'missing/*.parquet'", "file_error")]
    for query, code in cases:
        with pytest.raises(TorchshError) as e:
            sql.open_query(query, str(tmp_path), Options())
        assert e.value.code == code and "\n" not in e.value.message and e.value.hint


def test_duckdbs_memory_is_a_share_of_the_room_the_budget_leaves(tmp_path):
    assert sql.memory_limit(None) is None and sql.memory_limit(Budget(None, "none")) is None
    roomy = Budget(1 << 40, "1T")
    assert sql.memory_limit(roomy) <= (1 << 40) // sql.MEMORY_SHARE
    assert sql.memory_limit(Budget(1, "tiny")) == sql.MEMORY_LEAST
    connection = sql._connect(duckdb, str(tmp_path), Budget(1, "tiny"))
    setting = connection.execute("SELECT current_setting('memory_limit'), current_setting('threads')").fetchone()
    assert setting == ("%.1f MiB" % (sql.MEMORY_LEAST / (1 << 20)), sql.THREADS)


def test_a_missing_duckdb_names_the_sql_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb raises ImportError
    with pytest.raises(TorchshError) as e:
        sql.open_query("SELECT 1 AS a", str(tmp_path), Options())
    assert e.value.code == "missing_extra" and "torchsh[sql]" in e.value.hint
