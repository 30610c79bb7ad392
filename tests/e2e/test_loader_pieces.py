"""`torch data loader --shuffle --shuffle_buffer N` over a streamed Parquet file through real bash: an epoch read by
two workers sees every row once, each batch from a window of row groups, the same again with the same seed; the
window must come with --shuffle and be 1 or more; one the memory budget cannot hold is refused before a read."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file

ROWS, GROUP = 600, 50
EPOCH = "hs=(); while b=$(torch data next --keep $L); do hs+=($b); done; torch save ${hs[@]} %s"


def _parquet(sh):
    path = sh.tmp("pieces.parquet")
    pq.write_table(pa.table({"x": np.arange(ROWS, dtype=np.float32) * 2, "id": np.arange(ROWS)}), path,
                   row_group_size=GROUP)
    return path


def _epoch(sh, path, flags, name):
    out = sh.tmp(name)
    sh("L=$(torch data loader $(torch data open %s --stream --target id) %s); " % (path, flags) + EPOCH % out)
    saved = load_file(out)
    fields = [saved[str(i)] for i in range(len(saved))]
    return list(zip(fields[0::2], fields[1::2]))


@pytest.mark.slow  # two worker processes from a forkserver
def test_two_workers_see_every_row_once_from_windows_of_row_groups(sh):
    path = _parquet(sh)
    flags = "--batch_size 20 --shuffle --shuffle_buffer 100 --num_workers 2 --seed 4"
    batches = _epoch(sh, path, flags, "a.safetensors")
    ids = torch.cat([y for _, y in batches])
    assert sorted(ids.tolist()) == list(range(ROWS))  # no duplicate, no drop
    assert all(torch.equal(x.squeeze(-1), y.float() * 2) for x, y in batches)  # each row's features with its id
    assert ids.tolist() != list(range(ROWS))
    groups = [set((y // GROUP).tolist()) for _, y in batches]
    assert max(map(len, groups)) <= 4  # a batch from a window of (at least 100 rows:) 2 row groups, not everywhere
    again = _epoch(sh, path, flags, "b.safetensors")
    assert all(torch.equal(a[1], b[1]) for a, b in zip(batches, again)) and len(again) == len(batches)


def test_the_shuffle_buffer_needs_shuffle_and_one_row_or_more(sh):
    path = _parquet(sh)
    for flags, said in (("--shuffle_buffer 10", "without --shuffle"), ("--shuffle --shuffle_buffer 0", "got 0")):
        r = sh.run("torch data loader $(torch data open %s --stream --target id) %s" % (path, flags))
        assert r.code == 2 and "[bad_argument]" in r.err and said in r.err


def test_a_window_over_the_memory_budget_is_refused(sh):
    path = _parquet(sh)
    r = sh.run("torch data loader $(torch data open %s --stream --target id) --shuffle --shuffle_buffer %d"
               % (path, 10 ** 12))
    assert r.code != 0 and "[out_of_memory]" in r.err and "shuffle buffer" in r.err
