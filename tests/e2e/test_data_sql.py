"""`torch data sql QUERY` through real bash: the items are the rows pyarrow reads from the same files (the
oracle), filtered as the query says, relative paths from the shell's cwd; a URL or INSTALL is refused (nothing
reaches the network); the result's file in the daemon's scratch folder goes with `torch free`."""
import glob
import json
import os

import pytest

from torchsh import cachefiles

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")


def _logs(sh):
    """A folder with logs/part-{0,1,2}.parquet (id, day, a, b, y): (the folder, every row as a dict)."""
    folder = sh.tmp("sql")
    os.makedirs(os.path.join(folder, "logs"))
    rows = []
    for k in range(3):
        part = [{"id": n, "day": "2026-%02d-01" % (10 + n % 3), "a": n / 8, "b": -n / 4, "y": n % 4}
                for n in range(k * 40, (k + 1) * 40)]
        pq.write_table(pa.Table.from_pylist(part), os.path.join(folder, "logs", "part-%d.parquet" % k))
        rows += part
    return folder, rows


def _items(sh, handle, cwd=None):
    return [json.loads(line) for line in sh("torch data head %s 100000" % handle, cwd=cwd).split("\n") if line]


def _scratch_results():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSH_")}  # the daemon's (conftest.Shell)
    return set(glob.glob(os.path.join(cachefiles.folder(env), "torchd-data-*", "*.parquet")))


def test_a_query_over_a_glob_relative_to_the_cwd_gives_the_rows_it_selects(sh):
    folder, rows = _logs(sh)
    d = sh("""torch data sql "SELECT * EXCLUDE (id, day) FROM 'logs/*.parquet' WHERE day >= '2026-11-01' """
           """ORDER BY id" --target y""", cwd=folder)
    want = [[[r["a"], r["b"]], r["y"]] for r in rows if r["day"] >= "2026-11-01"]
    assert _items(sh, d) == want and len(want) == 80
    info = json.loads(sh("torch data info --json %s" % d))
    assert info["length"] == 80 and [f["dtype"] for f in info["fields"]] == ["float32", "int64"]


def test_a_url_or_an_install_is_refused_and_nothing_is_installed(sh):
    folder, _ = _logs(sh)
    r = sh.run("""torch data sql "SELECT * FROM 'https://127.0.0.1:9/x.parquet'" """, cwd=folder)
    assert r.code != 0 and "reads no URL" in r.err and "never installed" in r.err
    r = sh.run('torch data sql "INSTALL httpfs"', cwd=folder)
    assert r.code != 0 and "never installs" in r.err
    r = sh.run("""torch data sql "COPY (SELECT 1 AS a) TO 'out.csv'" """, cwd=folder)
    assert r.code != 0 and "not a COPY" in r.err and not os.path.exists(os.path.join(folder, "out.csv"))


def test_a_target_the_result_lacks_is_refused_naming_its_columns(sh):
    folder, _ = _logs(sh)
    r = sh.run("""torch data sql "SELECT a, b FROM 'logs/part-0.parquet'" --target label""", cwd=folder)
    assert r.code != 0 and "no column 'label'" in r.err and "its columns: a b" in r.err


def test_the_results_file_goes_away_after_torch_free(sh):
    folder, _ = _logs(sh)
    before = _scratch_results()
    d = sh("""torch data sql "SELECT a, y FROM 'logs/*.parquet'" --target y""", cwd=folder)
    made = _scratch_results() - before
    assert len(made) == 1 and len(_items(sh, d)) == 120
    sh("torch free %s" % d)
    assert not os.path.exists(made.pop())
