"""`fit --val` with a streamed validation loader, and `torch sweep` over a streamed dataset, give the numbers the
same commands give over the same Parquet file read whole (without --stream), bit for bit: the items are the same
(data/piecetables.py) and so is the order where the loaders are unshuffled (a streamed --shuffle permutes
pieces, then rows within windows: another order than RandomSampler's, so not compared here)."""
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

pytestmark = pytest.mark.slow  # each command runs twice (streamed, in memory); a sweep of trials

X = torch.randn(90, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (90,), generator=torch.Generator().manual_seed(2))


def _file(sh):
    path = sh.tmp("val-sweep.parquet")
    if not os.path.exists(path):
        columns = {"x%d" % j: X[:, j].numpy() for j in range(4)}
        pq.write_table(pa.table(dict(columns, y=Y.numpy().astype(np.int64))), path, row_group_size=16)
    return path


def _loaders(path, stream):
    flag = "--stream" if stream else ""
    return ("d=$(torch data open %s --target y %s); L=$(torch data loader $d --batch_size 10); "
            "V=$(torch data loader $d --batch_size 32); " % (path, flag))


def _rows_streamed_and_in_memory(sh, command, keys):
    """{stream?: the --json rows' KEYS} of COMMAND over loaders L and V of the same file, streamed and in memory."""
    path, rows = _file(sh), {}
    for stream in (True, False):
        out = sh(_loaders(path, stream) + command)
        rows[stream] = [{k: r[k] for k in keys} for r in map(json.loads, out.splitlines())]
    return rows


def test_fit_with_a_streamed_val_loader_equals_the_same_fit_in_memory(sh):
    rows = _rows_streamed_and_in_memory(
        sh, "torch manual_seed 0; m=$(torch nn sequential 'linear 4 8' relu 'linear 8 3'); o=$(torch optim sgd $m "
        "--lr 0.1); torch fit $m $o $L --loss cross_entropy --val $V --metrics accuracy --epochs 2 --json",
        ("loss", "val_loss", "val_accuracy"))
    assert len(rows[True]) == 2 and rows[True] == rows[False]


def test_a_sweep_over_a_streamed_dataset_equals_the_same_sweep_in_memory(sh):
    rows = _rows_streamed_and_in_memory(
        sh, "torch sweep --model \"sequential 'linear 4 {width}' relu 'linear {width} 3'\" --opt 'adam --lr {lr}' "
        "--data $L --val $V --loss cross_entropy --space 'width: [4,8]; lr: [0.01, 0.05]' --trials 2 --epochs 2 "
        "--seed 3 --pruner none --vectorize 1 --json", ("width", "lr", "val_loss"))
    assert len(rows[True]) == 2 and rows[True] == rows[False]
