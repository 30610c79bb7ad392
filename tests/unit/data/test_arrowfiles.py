"""data/arrowfiles.py: Arrow IPC files (polars' write_ipc, pyarrow's stream format) and a `datasets` save_to_disk
folder open with items equal to the source arrays; pieces are the record batches; opening maps without copying
(RSS of a subprocess, /proc/self/statm); damaged files are refused by name."""
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
import torch

from torchsh.data import batches, openers, pieces
from torchsh.errors import TorchshError

ROWS = 1000


def _columns(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=ROWS).astype(np.float32), "z": rng.integers(0, 9, ROWS), "y": rng.integers(0, 3, ROWS)}


def _all(d):
    return batches.gathered(d).__getitems__(torch.arange(len(d)))


def _check(d, cols):
    x, y = _all(d)
    assert torch.equal(x, torch.from_numpy(np.column_stack([cols["x"], cols["z"]])).float())
    assert torch.equal(y, torch.from_numpy(cols["y"])) and y.dtype == torch.int64


def test_a_polars_ipc_file_opens_with_the_source_arrays(tmp_path):
    polars = pytest.importorskip("polars")
    cols, path = _columns(), str(tmp_path / "frame.arrow")
    polars.DataFrame(cols).write_ipc(path)
    _check(openers.open_dataset([path], openers.Options(target="y")), cols)


def test_a_stream_format_file_opens_and_its_pieces_are_its_record_batches(tmp_path):
    cols, path = _columns(), str(tmp_path / "s.ipc")
    table = pa.table(cols)
    with pa.ipc.new_stream(path, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=300):
            writer.write_batch(batch)
    d = openers.open_dataset([path], openers.Options(target="y"))
    _check(d, cols)
    assert pieces.piece_starts(d).tolist() == [0, 300, 600, 900] and d.stream["piece"] == "record batch"


def test_a_datasets_save_to_disk_folder_opens_with_the_source_arrays(tmp_path):
    datasets = pytest.importorskip("datasets")
    cols, folder = _columns(), str(tmp_path / "hf")
    datasets.Dataset.from_dict(cols).save_to_disk(folder)
    d = openers.open_dataset([folder], openers.Options(target="y"))
    _check(d, cols)
    assert d.stream["format"] == "arrow" and d.stream["files"][0].startswith(folder)


def test_a_set_of_arrow_files_is_one_table(tmp_path):
    parts = [_columns(n) for n in range(3)]
    for n, cols in enumerate(parts):
        with pa.ipc.new_file(str(tmp_path / ("p%d.feather" % n)), pa.table(cols).schema) as writer:
            writer.write_table(pa.table(cols))
    d = openers.open_dataset(["p*.feather"], openers.Options(target="y"), str(tmp_path))
    _check(d, {k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
    assert pieces.piece_starts(d).tolist() == [0, ROWS, 2 * ROWS]


def test_a_truncated_arrow_file_is_refused_at_open_by_name(tmp_path):
    path = str(tmp_path / "cut.arrow")
    with pa.ipc.new_file(path, pa.table(_columns()).schema) as writer:
        writer.write_table(pa.table(_columns()))
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    with pytest.raises(TorchshError) as e:
        openers.open_dataset([path], openers.Options())
    assert e.value.code == "file_error" and path in str(e.value)


def test_a_state_json_naming_a_file_outside_its_folder_is_refused(tmp_path):
    (tmp_path / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../secret.arrow"}]}))
    (tmp_path / "dataset_info.json").write_text("{}")
    with pytest.raises(TorchshError) as e:
        openers.open_dataset([str(tmp_path)], openers.Options())
    assert e.value.code == "file_error" and "../secret.arrow" in str(e.value)


def test_stream_is_taken_as_it_is_for_arrow_files_which_always_stream(tmp_path):
    path = str(tmp_path / "a.arrow")
    with pa.ipc.new_file(path, pa.table(_columns()).schema) as writer:
        writer.write_table(pa.table(_columns()))
    streamed, plain = (openers.open_dataset([path], openers.Options(stream=s)) for s in (True, False))
    assert streamed.stream == plain.stream and len(streamed) == len(plain)
    assert all(torch.equal(a, b) for a, b in zip(streamed[len(plain) - 1], plain[len(plain) - 1]))


def test_tar_shards_beside_other_files_are_refused(tmp_path):
    path = str(tmp_path / "a.arrow")
    with pa.ipc.new_file(path, pa.table(_columns()).schema) as writer:
        writer.write_table(pa.table(_columns()))
    with pytest.raises(TorchshError) as e:
        openers.open_dataset([path, str(tmp_path / "train-000.tar")], openers.Options())
    assert e.value.code == "bad_argument" and ".tar" in str(e.value)


RSS_PROBE = """
import os, sys
from torchsh.data import openers
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
openers.open_dataset([sys.argv[1]], openers.Options(target="y"))  # imports and pyarrow's pools warm
before = rss()
d = openers.open_dataset([sys.argv[1]], openers.Options(target="y"))
print(rss() - before, len(d))
"""


@pytest.mark.slow
def test_opening_a_200_mb_arrow_file_copies_nothing(tmp_path):
    path, rows = str(tmp_path / "big.arrow"), 200 * 2**20 // (8 * 4)
    table = pa.table({"x%d" % k: np.full(rows, k, dtype=np.float64) for k in range(3)} | {"y": np.zeros(rows, np.int64)})
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table, max_chunksize=65536)
    del table
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, path], capture_output=True, text=True, check=True).stdout
    grown, length = map(int, out.split())
    assert length == rows and os.path.getsize(path) > 200 * 2**20 - 2**20
    assert grown < 4 * 2**20, "opening grew RSS by %d bytes" % grown
