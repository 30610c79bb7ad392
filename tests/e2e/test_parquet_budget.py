"""A whole read of a .parquet file bigger than the daemon's memory budget is refused before a byte of data is read
(out_of_memory, exit 4) with the hint --stream; the same file opened with --stream opens, reading its footer only.
The file is zeros: tiny on disk, 600 MB decoded; its cost is what its footer says the columns decode to."""
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow  # a daemon of its own, a file of 75 million rows written


def test_a_parquet_read_whole_past_the_budget_is_refused_with_the_hint_stream(fresh_sh):
    s = fresh_sh(start=False)
    s.env.update(TORCHSH_MAX_MEMORY="512M")
    s("torch daemon start")
    path = s.tmp("zeros.parquet")
    group = pa.table({"x": np.zeros(750_000)})  # one row group a write
    with pq.ParquetWriter(path, group.schema) as writer:
        for _ in range(100):  # one row group at a time: this process never holds the file's 600 MB
            writer.write_table(group)
    r = s.run("torch data open %s" % path)
    assert r.code == 4 and "[out_of_memory]" in r.err and "572.2 MiB" in r.err, r.err
    assert "--stream" in r.err and "torch free" in r.err, r.err
    d = s("torch data open %s --stream" % path)
    info = json.loads(s("torch data info --json %s" % d))
    assert info["length"] == 75_000_000 and info["stream"]["pieces"] == 100
