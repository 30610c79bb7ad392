"""data/parquetstream.py: a Parquet set read by row group gives the items and batches of the same table read whole
(today's `data open x.parquet`, pyarrow the oracle) bit for bit; opening reads footers only; the piece cache stays
within its bound; damaged shards are refused by file (and row group)."""
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import torch.utils.data

from torchsh.data import batches, openers, parquetstream, pieces
from torchsh.errors import TorchshError

ROWS, GROUP = 1000, 128


def _table(seed=0, rows=ROWS):
    rng = np.random.default_rng(seed)
    return pa.table({"a": rng.normal(size=rows), "b": rng.integers(-2**40, 2**40, rows),
                     "c": rng.normal(size=rows).astype(np.float32), "color": rng.choice(["red", "green", "blue"], rows),
                     "species": rng.choice(["setosa", "virginica", "versicolor"], rows),
                     "k": rng.integers(0, 5, rows).astype(np.int32), "r": rng.normal(size=rows)})


@pytest.fixture
def table_file(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(_table(), path, row_group_size=GROUP)
    return path


FLAGS = [dict(target="species", onehot="color"), dict(target="k", columns="a,b"), dict(target="r", columns="c"),
         dict(target="k", columns=["a", "c,b"], dtype=torch.float64), dict(columns="a,b,c"),
         dict(target="species", columns="a", target_dtype=torch.int32), dict(target="k", onehot="color,species")]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: " ".join("--%s %s" % kv for kv in f.items()))
def test_items_and_batches_of_a_stream_equal_the_whole_read_bit_for_bit(table_file, flags):
    whole = openers.open_dataset([table_file], openers.Options(**flags))
    stream = openers.open_dataset([table_file], openers.Options(stream=True, **flags))
    assert len(stream) == len(whole) and stream.classes == whole.classes and stream.categories == whole.categories
    assert stream.field_names == whole.field_names and stream.field_columns == whole.field_columns
    for i in (0, 127, 128, ROWS - 1, -1):
        for got, want in zip(stream[i], whole[i]):
            assert got.dtype == want.dtype and torch.equal(got, want)
    for got, want in zip(batches.sliced_batches(stream, 100), batches.sliced_batches(whole, 100)):
        assert all(g.dtype == w.dtype and torch.equal(g, w) and g.is_contiguous() for g, w in zip(got, want))
    shuffled = torch.randperm(ROWS, generator=torch.Generator().manual_seed(0))[:300]
    for got, want in zip(batches.gathered(stream).__getitems__(shuffled), batches.gathered(whole).__getitems__(shuffled)):
        assert torch.equal(got, want)


def _shards(tmp_path, groups=((300, 100), (250, 128), (450, 200))):
    paths, tables = [], []
    for n, (rows, group) in enumerate(groups):
        tables.append(_table(n, rows))
        paths.append(str(tmp_path / ("s-%03d.parquet" % n)))
        pq.write_table(tables[-1], paths[-1], row_group_size=group)
    return paths, pa.concat_tables(tables)


def test_a_three_file_set_is_one_dataset_whose_pieces_are_the_row_groups(tmp_path):
    paths, table = _shards(tmp_path)
    d = openers.open_dataset(["s-{000..002}.parquet"], openers.Options(target="k", columns="a,c", stream=True),
                             str(tmp_path))
    groups = [pq.ParquetFile(p).metadata.row_group(g).num_rows for p in paths
              for g in range(pq.ParquetFile(p).metadata.num_row_groups)]
    assert len(d) == sum(pq.ParquetFile(p).metadata.num_rows for p in paths) == table.num_rows
    assert pieces.piece_starts(d).tolist() == np.cumsum([0] + groups[:-1]).tolist()
    want_x = torch.from_numpy(np.column_stack([table.column("a").to_numpy(), table.column("c").to_numpy()])).float()
    got_x, got_y = batches.gathered(d).__getitems__(torch.arange(len(d)))
    assert torch.equal(got_x, want_x) and torch.equal(got_y, torch.from_numpy(table.column("k").to_numpy()))
    info = d.stream
    assert info["files"] == paths and info["rows"] == len(d) and info["pieces"] == len(groups)
    assert info["schema"]["species"] == "string" and info["piece"] == "row group"


def test_opening_reads_no_row_data(tmp_path, monkeypatch):
    paths, _ = _shards(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("a row group was read at open")
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", refuse)
    before = pa.total_allocated_bytes()
    d = parquetstream.open_fields(paths, openers.Options(target="k", columns="a,r"))
    assert pa.total_allocated_bytes() - before < 4096 and len(d[0]) == 1000
    with pytest.raises(AssertionError):
        d[0].item(0)


def test_reading_in_order_keeps_the_piece_cache_within_its_bound(tmp_path):
    paths, table = _shards(tmp_path)
    d = openers.open_dataset(paths, openers.Options(target="k", columns="a,b,c", stream=True))
    cache = d.fields[0].piece_cache
    cache.limit = 3 * 200 * d.fields[0].source.row_bytes()  # three of the largest row groups
    total = sum(len(b[0]) for b in batches.sliced_batches(d, 64))
    assert total == table.num_rows and 0 < cache.held_bytes <= cache.peak_bytes <= cache.limit


def test_reserve_holds_the_window_and_the_largest_piece_once_the_budget_admits_it(tmp_path):
    paths, _ = _shards(tmp_path)
    d = openers.open_dataset(paths, openers.Options(target="k", columns="a,b,c", stream=True))
    admitted = []

    class Budget:
        def admit_bytes(self, size, what):
            admitted.append((size, what))
    before = d.fields[0].piece_cache.limit
    pieces.reserve(d, 10_000_000, Budget())
    want = (10_000_000 + 200) * d.fields[0].source.row_bytes()  # the window and the largest row group
    assert d.fields[0].piece_cache.limit == want and admitted == [(want - before, "the loader's shuffle buffer")]
    pieces.reserve(d, 10, Budget())
    assert d.fields[0].piece_cache.limit == want and len(admitted) == 1  # never shrinks, nothing more to admit


def test_pickling_drops_the_cache_and_workers_give_the_same_batches(tmp_path):
    paths, _ = _shards(tmp_path)
    d = openers.open_dataset(paths, openers.Options(target="species", columns="a,b", stream=True))
    d[0]
    copy = pickle.loads(pickle.dumps(d))
    assert len(d.fields[0].piece_cache) == 1 and len(copy.fields[0].piece_cache) == 0
    assert copy.fields[0].source is copy.fields[1].source  # one cache for the fields of one table
    loaders = [torch.utils.data.DataLoader(d, batch_size=50, num_workers=w) for w in (0, 2)]
    for zero, two in zip(*loaders):
        assert all(torch.equal(a, b) for a, b in zip(zero, two))


def test_a_truncated_file_is_refused_at_open_by_name(tmp_path):
    paths, _ = _shards(tmp_path)
    with open(paths[1], "r+b") as f:
        f.truncate(2000)
    with pytest.raises(TorchshError) as e:
        parquetstream.open_fields(paths, openers.Options())
    assert e.value.code == "file_error" and paths[1] in str(e.value) and paths[0] not in str(e.value)


def test_a_shard_with_another_schema_is_refused_naming_both_files_and_the_column(tmp_path):
    paths, _ = _shards(tmp_path)
    pq.write_table(_table(5, 100).set_column(5, "k", pa.array(["x"] * 100)), paths[2])
    with pytest.raises(TorchshError) as e:
        openers.open_dataset(paths, openers.Options(stream=True))
    assert e.value.code == "file_error" and paths[0] in str(e.value) and paths[2] in str(e.value)
    assert "k: int32 vs k: string" in str(e.value)


def test_a_damaged_row_group_is_refused_when_read_naming_the_file_and_the_group(tmp_path):
    paths, _ = _shards(tmp_path)
    chunk = pq.ParquetFile(paths[1]).metadata.row_group(1).column(0)
    with open(paths[1], "r+b") as f:
        f.seek(chunk.data_page_offset)
        f.write(b"\xff" * 64)
    d = openers.open_dataset(paths, openers.Options(target="k", columns="a,b,c", stream=True))
    d[0]  # the other groups still read
    with pytest.raises(TorchshError) as e:
        d[300 + 128]
    assert e.value.code == "file_error" and "%s row group 1" % paths[1] in str(e.value)
