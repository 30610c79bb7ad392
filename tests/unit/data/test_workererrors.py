"""data/workererrors.py: a TorchshError raised in a DataLoader worker reaches the loader's caller as itself (its code,
message and hint), not as the RuntimeError DataLoader makes of an exception it cannot rebuild from text."""
import pytest

from torchsh.data.loader import Loader
from torchsh.data.workererrors import WorkerError, WorkerReads
from torchsh.errors import TorchshError


def test_the_error_travels_in_the_text_dataloader_rebuilds_it_from():
    carried = WorkerError.carrying(TorchshError("file_error", "a.parquet row group 3: bad", "fix it"))
    # what DataLoader's ExceptionWrapper.reraise builds in the parent: type(e)(its traceback's text)
    rebuilt = WorkerError("Caught WorkerError in DataLoader worker process 1.\nOriginal Traceback (most recent call "
                          "last):\n  File ...\n%s: %s\n" % (type(carried).__name__, carried))
    e = rebuilt.torchsh_error()
    assert (e.code, e.message, e.hint) == ("file_error", "a.parquet row group 3: bad", "fix it")


@pytest.mark.slow
def test_a_workers_file_error_reaches_the_loader_as_file_error():
    from support.failing import FailingRows
    loader = Loader(FailingRows(), batch_size=4, num_workers=2)
    assert loader.next_batch().flatten().tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TorchshError) as e:
        loader.next_batch()
    assert (e.value.code, e.value.message, e.value.hint) == ("file_error", "x.parquet row group 1: damaged page",
                                                             "fix x.parquet")


def test_reads_are_the_datasets_own_items():
    from support.failing import FailingRows
    reads = WorkerReads(FailingRows())
    assert len(reads) == 8 and reads[2].tolist() == [2.0]
    with pytest.raises(WorkerError):
        reads.__getitems__([4, 5])
