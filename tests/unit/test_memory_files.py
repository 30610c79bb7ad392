"""memory/files.py: what `data open` costs before it reads: a Parquet file read whole costs its size at least; the
same file opened with --stream reads only its footer (row groups are admitted as the loader reads them); a
compressed Parquet file costs its columns decoded (its footer says), and only its whole read is hinted --stream."""
import os

import numpy as np
import pytest

from torchsh.memory.files import files_read_whole, whole_read_hint


def test_a_parquet_read_whole_costs_its_size_and_a_stream_nothing(tmp_path):
    path = tmp_path / "t.parquet"
    path.write_bytes(b"\0" * 5000)
    assert files_read_whole("data.open", {"files": [str(path)]}) == 5000
    assert files_read_whole("data.open", {"files": [str(path)], "stream": True}) == 0
    assert files_read_whole("data.open", {"files": [str(path)], "stream": False}) == 5000


def test_a_parquet_read_whole_costs_its_columns_decoded_from_the_footer_not_its_compressed_size(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "zeros.parquet"
    rows = 100_000
    pq.write_table(pa.table({"x": np.zeros(rows), "y": np.zeros(rows, dtype=np.int32), "s": ["a"] * rows}), path,
                   row_group_size=30_000)
    cost = files_read_whole("data.open", {"files": [str(path)]})
    assert os.path.getsize(path) < 10_000  # dictionary and run-length encodings: zeros cost nothing on disk
    assert cost >= rows * (8 + 4)  # ... and every row decoded
    assert files_read_whole("load", {"file": str(path)}) == cost


def test_only_a_whole_parquet_read_is_hinted_to_stream():
    assert "--stream" in whole_read_hint("data.open", {"files": ["a.csv", "t.parquet"]})
    assert whole_read_hint("data.open", {"files": ["t.parquet"], "stream": True}) is None
    assert whole_read_hint("data.open", {"files": ["t.csv"]}) is None
    assert whole_read_hint("load", {"file": "t.parquet"}) is None
