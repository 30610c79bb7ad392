"""`torch fit … --nproc_per_node 2` over a loader of a streamed Parquet set (train/distributed/shares.py's piece
shares) whose length (51) is not a multiple of 2 ranks × batch 5: rank 0 takes rows 0..24, rank 1 rows 25..50,
each in batches of 5 in order (no shuffle); rank 1 takes 6 batches, rank 0 5 and then an uncounted copy of its
last (weight 0, as DDP's Join). The oracle is plain PyTorch replaying DDP in one process: each step's gradient is
the mean over the ranks of each counted batch's mean-loss gradient. The epoch counts every row once: the
epoch's loss is the mean over the 51 rows (padding or a dropped row would move it), and the last step's loss in
metrics.jsonl is rank 1's alone (rank 0 counted nothing in it)."""
import json
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from support.ddp import TOL, assert_close, checkpoint_of, python_model

pytestmark = pytest.mark.slow  # two ranks start

N, B, LR = 51, 5, 0.1
X = torch.randn(N, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randn(N, generator=torch.Generator().manual_seed(2))


def _parquet_set(folder):
    os.makedirs(folder)
    for k, (lo, hi) in enumerate(((0, 20), (20, 51))):  # two files, row groups of 8: pieces cross the ranks' split
        columns = {"x%d" % j: X[lo:hi, j].numpy() for j in range(4)}
        pq.write_table(pa.table(dict(columns, y=Y[lo:hi].numpy())), os.path.join(folder, "part-%d.parquet" % k),
                       row_group_size=8)


def replayed_ddp(weights, epochs):
    """The two ranks' steps replayed in one process: (weights, per-epoch mean loss over the rows counted)."""
    model = python_model(weights)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    shares = [list(range(0, N // 2)), list(range(N // 2, N))]
    steps = -(-max(len(s) for s in shares) // B)
    losses = []
    for _ in range(epochs):
        total = 0.0
        for k in range(steps):
            opt.zero_grad()
            step_loss = 0
            for share in shares:
                rows = share[k * B:(k + 1) * B]
                if not rows:  # the short rank's copy of its last batch: weight 0
                    continue
                loss = F.mse_loss(model(X[rows]), Y[rows].unsqueeze(1))
                total += loss.item() * len(rows)
                step_loss = step_loss + loss / len(shares)  # DDP averages the ranks' gradients
            step_loss.backward()
            opt.step()
        losses.append(total / N)
    return model.state_dict(), losses


def test_two_ranks_over_a_streamed_parquet_set_count_every_row_once_and_equal_ddp_replayed(sh):
    folder = sh.tmp("dist-shards")
    _parquet_set(folder)
    first, ck, log = sh.tmp("first-stream.safetensors"), sh.tmp("ck-stream.safetensors"), sh.tmp("run-stream")
    rows = sh("cd %s && m=$(torch nn sequential 'linear 4 8' relu 'linear 8 1'); torch nn save $m %s; "
              "o=$(torch optim sgd $m --lr %s --momentum 0.9); "
              "L=$(torch data loader $(torch data open 'part-*.parquet' --stream --target y) --batch_size %d); "
              "torch fit $m $o $L --loss mse_loss --epochs 2 --nproc_per_node 2 --json --log %s; "
              "torch checkpoint save %s $m $o" % (folder, first, LR, B, log, ck))
    want_weights, want_losses = replayed_ddp(load_file(first), epochs=2)
    assert_close(checkpoint_of(ck)[0], want_weights)
    rows = [json.loads(r) for r in rows.splitlines()]
    assert [r["epoch"] for r in rows] == [1, 2]
    assert [r["loss"] for r in rows] == pytest.approx(want_losses, abs=TOL)  # each of the 51 rows once
    with open(os.path.join(log, "metrics.jsonl")) as f:
        steps = [json.loads(line) for line in f if '"step"' in line and '"kind": "step"' in line]
    assert len(steps) == 12 and not any(math.isnan(r["loss"]) for r in steps)  # the short rank's copy has no loss
