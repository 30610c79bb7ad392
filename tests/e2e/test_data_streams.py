"""`torch data open` of streamed tables through real bash: a quoted Parquet glob with --stream is one dataset whose
items are pyarrow's rows, `data info` shows its schema, files, rows and row groups from the footers, an Arrow file
opens memory-mapped, and a missing brace-named shard is refused by name."""
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch


def _shards(sh):
    folder = sh.tmp("shards")
    os.makedirs(folder)
    tables = []
    for n in range(3):
        rng = np.random.default_rng(n)
        tables.append(pa.table({"a": rng.normal(size=40), "b": rng.integers(0, 9, 40),
                                "label": rng.choice(["cat", "dog"], 40)}))
        pq.write_table(tables[-1], "%s/part-%03d.parquet" % (folder, n), row_group_size=16)
    return folder, pa.concat_tables(tables)


def test_a_quoted_parquet_glob_streams_as_one_dataset_and_info_reads_the_footers(sh):
    folder, table = _shards(sh)
    d = sh("cd %s && torch data open 'part-*.parquet' --stream --target label" % folder)
    info = json.loads(sh("torch data info --json %s" % d))
    assert info["length"] == 120 and info["classes"] == ["cat", "dog"]
    stream = info["stream"]
    assert stream["rows"] == 120 and stream["pieces"] == 9 and stream["piece"] == "row group"
    assert stream["files"] == ["%s/part-%03d.parquet" % (folder, n) for n in range(3)]
    assert stream["schema"] == {"a": "double", "b": "int64", "label": "string"}
    text = sh("torch data info %s" % d)
    assert "parquet: 3 files, 120 rows, 9 row groups" in text and "schema   a: double, b: int64, label: string" in text
    items = [json.loads(line) for line in sh("torch data head %s 120" % d).split("\n")]
    want_x = torch.from_numpy(np.column_stack([table.column("a").to_numpy(), table.column("b").to_numpy()])).float()
    assert torch.equal(torch.tensor([x for x, _ in items]), want_x)
    assert [y for _, y in items] == [["cat", "dog"].index(v) for v in table.column("label").to_pylist()]


def test_a_missing_brace_named_shard_is_refused_by_name(sh):
    folder, _ = _shards(sh)
    r = sh.run("cd %s && torch data open 'part-{000..003}.parquet' --stream --target label" % folder)
    assert r.code != 0 and "part-003.parquet" in r.err and r.err.rstrip().endswith("[file_error]"), r.err


def test_an_arrow_file_opens_memory_mapped(sh):
    path = sh.tmp("frame.arrow")
    x = np.arange(12, dtype=np.float32)
    with pa.ipc.new_file(path, pa.schema([("x", pa.float32()), ("y", pa.int64())])) as writer:
        writer.write_table(pa.table({"x": x, "y": np.arange(12) % 3}))
    d = sh("torch data open %s --target y" % path)
    info = json.loads(sh("torch data info --json %s" % d))
    assert info["stream"]["format"] == "arrow" and info["length"] == 12
    assert [json.loads(line) for line in sh("torch data head %s 3" % d).split("\n")] == [[[0.0], 0], [[1.0], 1],
                                                                                         [[2.0], 2]]
