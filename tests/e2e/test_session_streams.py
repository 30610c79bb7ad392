"""`torch session save` / `session load` of a streamed dataset: a Parquet set opened with --stream and a loader over
it with --shuffle_buffer come back in a fresh daemon over the same files, and the loader's next batches are those
the first daemon would have given."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from support.second_daemon import SecondDaemon

pytestmark = pytest.mark.slow  # two daemons start (the tier rule: tests/conftest.py)


@pytest.fixture
def own(sh):
    d = SecondDaemon(sh, "streams")
    try:
        yield d
    finally:
        d.stop()


def _shards(folder):
    os.makedirs(folder)
    for n in range(3):
        rng = np.random.default_rng(n)
        pq.write_table(pa.table({"a": rng.normal(size=50), "b": rng.integers(0, 9, 50),
                                 "label": rng.choice(["cat", "dog", "emu"], 50)}),
                       os.path.join(folder, "part-%d.parquet" % n), row_group_size=16)


def _next_batches(d, loader, count):
    out = []
    for _ in range(count):
        handles = d("torch data next %s" % loader).split()
        out.append([d.fetch(h) for h in handles])
    return out


def test_a_streamed_parquet_loader_comes_back_and_gives_the_next_batches_the_first_daemon_would(own, tmp_path):
    folder = str(tmp_path / "shards")
    _shards(folder)
    data, loader = own("cd %s && d=$(torch data open 'part-*.parquet' --stream --target label) && "
                       "echo $d $(torch data loader $d --batch_size 8 --shuffle --shuffle_buffer 20 --seed 5)"
                       % folder).split()
    _next_batches(own, loader, 3)  # mid-epoch
    own("torch session save %s" % (tmp_path / "sess"))
    want = _next_batches(own, loader, 12)  # the reference: no save/load in between
    own("torch daemon stop")
    own("torch session load %s" % (tmp_path / "sess"))  # a fresh daemon starts here
    assert "parquet: 3 files, 150 rows, 12 row groups" in own("torch data info %s" % data)
    got = _next_batches(own, loader, 12)
    assert all(torch.equal(a, b) for x, y in zip(got, want) for a, b in zip(x, y)) and len(got) == len(want)
