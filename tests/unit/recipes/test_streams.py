"""recipes/streams.py through session/recipe.py (capture, JSON, build, state): a stream dataset comes back over the
same files with the same items, a loader over it with --shuffle_buffer gives the batches the first would have
given, a file changed since is refused as the opener refuses it, a `data sql` result reruns its query in its cwd
(and is refused when that result changed), tar shards keep their fields' order; chat and token datasets travel
as their values."""
import json
import os

import numpy as np
import pytest
import torch

from torchsh.data import tarshards
from torchsh.data.datasets import FileDataset, TensorField
from torchsh.data.loader import Loader
from torchsh.data.openers import Options, open_dataset
from torchsh.data.tokenfile import TokenWindows
from torchsh.errors import TorchshError
from torchsh.session import recipe

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def rebuilt(obj):
    """OBJ rebuilt through JSON text and its state tensors, as a session does."""
    rec = json.loads(json.dumps(recipe.capture(obj, {})))
    state = {k: v.clone() for k, v in recipe.state_tensors(obj, {}).items()}
    new = recipe.build(rec, {}.__getitem__)
    recipe.load_state(new, state)
    return new


def _table(rows=70, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({"a": rng.normal(size=rows), "b": rng.integers(0, 9, rows).astype(np.int32),
                     "kind": rng.choice(["x", "y", "z"], rows), "label": rng.choice(["cat", "dog", "emu"], rows)})


def _parquet_set(folder, files=2):
    paths = []
    for k in range(files):
        paths.append(os.path.join(folder, "part-%d.parquet" % k))
        pq.write_table(_table(seed=k), paths[-1], row_group_size=16)
    return paths


def _items(d):
    return [d[i] for i in range(len(d))]


def _same(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for p, q in zip(a, b) for x, y in zip(p, q))


@pytest.mark.slow
def test_a_parquet_stream_comes_back_with_its_plan_and_a_loader_goes_on_with_the_same_batches(tmp_path):
    paths = _parquet_set(str(tmp_path))
    d = open_dataset(paths, Options(columns=["a,b,kind"], target="label", onehot="kind", stream=True))
    loader = Loader(d, batch_size=8, shuffle=True, seed=3, shuffle_buffer=20)
    for _ in range(5):
        loader.next_batch()
    new = rebuilt(loader)
    assert new.dataset.fields[0].source is new.dataset.fields[1].source  # one source, as `data open` makes
    assert new.dataset.classes == d.classes and new.dataset.fields[0].categories == {"kind": ["x", "y", "z"]}
    assert _same(_items(new.dataset), _items(d))
    for _ in range(20):  # past the epoch's end: the next epoch's order too
        a, b = loader.next_batch(), new.next_batch()
        assert (a is None) == (b is None) and (a is None or all(torch.equal(p, q) for p, q in zip(a, b)))


def test_a_parquet_file_written_again_since_the_save_is_refused_as_the_opener_refuses_it(tmp_path):
    paths = _parquet_set(str(tmp_path))
    d = open_dataset(paths, Options(target="label", columns="a,b", stream=True))
    rec = json.loads(json.dumps(recipe.capture(d, {})))
    pq.write_table(_table(rows=71, seed=9), paths[1], row_group_size=16)
    with pytest.raises(TorchshError) as e:
        recipe.build(rec, {}.__getitem__)
    assert e.value.code == "file_error" and "part-1.parquet changed after the dataset was opened" in e.value.message


def test_an_arrow_file_comes_back_memory_mapped_with_the_same_items(tmp_path):
    path = str(tmp_path / "frame.arrow")
    with pa.ipc.new_file(path, _table().schema) as writer:
        for k in range(3):
            writer.write_table(_table(rows=10, seed=k))
    d = open_dataset([path], Options(columns="a,b", target="label"))
    new = rebuilt(d)
    assert new.stream["format"] == "arrow" and new.stream["pieces"] == 3 and _same(_items(new), _items(d))


def test_a_sql_result_reruns_its_query_in_its_cwd_and_a_changed_result_is_refused(tmp_path):
    pytest.importorskip("duckdb")
    from torchsh.data import sql
    pq.write_table(_table(), str(tmp_path / "t.parquet"))
    query = "SELECT a, b, label FROM 't.parquet' WHERE b > 2"
    d = sql.open_query(query, str(tmp_path), Options(target="label", dtype=torch.float64))
    rec = json.loads(json.dumps(recipe.capture(d, {})))
    assert rec["fields"][0]["type"] == "sql" and rec["fields"][0]["cwd"] == str(tmp_path)
    new = recipe.build(rec, {}.__getitem__)
    assert new.fields[0].source.pieces.files != d.fields[0].source.pieces.files  # a result file of its own
    assert _same(_items(new), _items(d)) and new.classes == d.classes and new[0][0].dtype == torch.float64
    pq.write_table(_table(seed=5), str(tmp_path / "t.parquet"))
    with pytest.raises(TorchshError) as e:
        recipe.build(rec, {}.__getitem__)
    assert e.value.code == "file_error" and "the query's result changed since it was saved" in e.value.message


def _shards(folder):
    """Two shards of samples {key.npy, key.json, key.cls}, written with the stdlib tarfile."""
    import io
    import tarfile
    paths = []
    for s in range(2):
        paths.append(os.path.join(folder, "train-%d.tar" % s))
        with tarfile.open(paths[-1], "w") as tar:
            for k in range(5):
                n = s * 5 + k
                buffer = io.BytesIO()
                np.save(buffer, np.full(3, n, dtype=np.float32))
                for ext, data in (("npy", buffer.getvalue()), ("json", json.dumps([n, -n]).encode()),
                                  ("cls", str(n % 3).encode())):
                    info = tarfile.TarInfo("s%03d.%s" % (n, ext))
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    return paths


def test_tar_shards_come_back_with_their_fields_in_order_and_a_changed_shard_is_refused(tmp_path):
    paths = _shards(str(tmp_path))
    d = FileDataset(tarshards.tar_fields(paths, Options(target="json")))  # the class is not last here
    new = rebuilt(d)
    assert [f.name for f in new.fields] == ["cls", "npy", "json"] == [f.name for f in d.fields]
    assert new.fields[0].index is new.fields[2].index and _same(_items(new), _items(d))
    rec = json.loads(json.dumps(recipe.capture(d, {})))
    with open(paths[1], "ab") as f:
        f.write(b"\0" * 512)
    with pytest.raises(TorchshError) as e:
        recipe.build(rec, {}.__getitem__)
    assert e.value.code == "file_error" and "train-1.tar changed after the dataset was opened" in e.value.message


def test_token_datasets_travel_as_their_values_and_come_back_in_memory(tmp_path):
    np.save(tmp_path / "tokens.npy", np.arange(40, dtype=np.int32))
    windows = TokenWindows("input_ids", str(tmp_path / "tokens.npy"), 8)
    dataset = FileDataset([windows, TokenWindows("labels", str(tmp_path / "tokens.npy"), 8)])
    back = rebuilt(dataset)
    os.remove(tmp_path / "tokens.npy")  # the rebuilt one holds its values: the token file may go with its daemon
    assert len(back) == 5 and all(isinstance(f, TensorField) for f in back.fields)
    want = torch.arange(40, dtype=torch.int64).view(5, 8)
    assert all(torch.equal(back[i][0], want[i]) and torch.equal(back[i][1], want[i]) for i in range(5))
