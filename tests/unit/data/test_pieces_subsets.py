"""A split of a stream (data/pieces.py on a Subset, verbs/data.py `data split`): each part holds random_split's
index set in file order, so its pieces are contiguous again and a shuffled loader over it reads them by pieces
instead of one row group per item."""
import torch
from support.pieced import pieced
from torch.utils.data import Subset, random_split

from torchsh.data import pieces
from torchsh.data.loader import Loader
from torchsh.data.piecesampler import PieceBatches
from torchsh.verbs.data import split

SIZES = [40, 25, 60, 35, 40]  # 200 rows


def test_a_subset_in_ascending_order_has_the_pieces_its_rows_fall_in():
    d = pieced([5, 3, 4])
    assert pieces.piece_starts(Subset(d, [0, 2, 6, 7, 8, 11])).tolist() == [0, 2, 4]
    assert pieces.piece_starts(Subset(d, [6, 7])).tolist() == [0]
    assert pieces.piece_starts(Subset(d, [7, 6])) is None  # a piece's rows not together: no pieces


def test_split_of_a_stream_keeps_random_splits_sets_each_in_file_order():
    d = pieced(SIZES)
    parts = split(None, d, 0.75, 0.25, seed=3)
    want = random_split(d, [0.75, 0.25], generator=torch.Generator().manual_seed(3))
    assert [p.indices for p in parts] == [sorted(w.indices) for w in want]


def test_a_shuffled_loader_over_a_split_part_reads_it_piece_by_piece():
    d = pieced(SIZES)
    train, _ = split(None, d, 0.75, 0.25, seed=3)
    loader = Loader(train, batch_size=10, shuffle=True, seed=0, shuffle_buffer=30)
    assert isinstance(loader.batches, PieceBatches)
    seen, touched = [], []
    while (batch := loader.next_batch()) is not None:
        seen += batch[1].tolist()
        touched.append(len({p for p in torch.searchsorted(torch.tensor([0, 40, 65, 125, 160]), batch[1],
                                                          right=True).tolist()}))
    assert sorted(seen) == sorted(train.indices)  # the part once, no row twice
    assert max(touched) <= 3  # a batch draws from one window's pieces, not from all five
