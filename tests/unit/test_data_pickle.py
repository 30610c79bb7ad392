"""The datasets of `torch data open` cross into DataLoader worker processes: they pickle without their
memory maps and safetensors handles (a pickled np.memmap would carry the whole file), and a spawned
worker reads the same items."""
import pickle

import numpy as np
import pytest
import torch
import torch.utils.data
from safetensors.torch import save_file

from torchsh.data import openers
from torchsh.data.transforms import Step, TransformedDataset


def _open(*paths):
    return openers.open_dataset([str(p) for p in paths], openers.Options())


def _items(ds):
    return [ds[i] for i in range(len(ds))]


def _same(a, b):
    return len(a) == len(b) and all(len(x) == len(y) and all(torch.equal(u, v) for u, v in zip(x, y))
                                    for x, y in zip(a, b))


def test_an_opened_npy_dataset_pickles_without_its_memory_map(tmp_path):
    x = np.random.default_rng(0).standard_normal((4096, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    ds = _open(tmp_path / "x.npy")
    ds[0]  # the map is open now
    data = pickle.dumps(ds)
    assert len(data) < x.nbytes // 100
    assert _same(_items(pickle.loads(data)), _items(ds))


def test_an_opened_safetensors_dataset_pickles_after_reading(tmp_path):
    save_file({"x": torch.randn(5, 3), "y": torch.arange(5)}, str(tmp_path / "d.safetensors"))
    ds = _open(tmp_path / "d.safetensors")
    ds[1]  # the safe_open slice (not picklable) is open now
    assert _same(_items(pickle.loads(pickle.dumps(ds))), _items(ds))


@pytest.mark.slow
def test_spawned_dataloader_workers_read_the_same_batches(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(24, dtype=np.float32).reshape(6, 4))
    np.save(tmp_path / "y.npy", np.arange(6))
    ds = TransformedDataset(_open(tmp_path / "x.npy", tmp_path / "y.npy"), [Step("dtype", 0, (torch.float64,))])
    ds[0]
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="spawn")
    here = torch.utils.data.DataLoader(ds, batch_size=4)
    assert _same([tuple(b) for b in loader], [tuple(b) for b in here])


def test_a_batch_read_in_one_gather_equals_the_items_read_one_by_one(tmp_path):
    x = np.random.default_rng(1).standard_normal((50, 3)).astype(">f4")  # big-endian: converted either way
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.arange(50))
    ds = _open(tmp_path / "x.npy", tmp_path / "y.npy")
    picks = [7, 0, 49, -1, 7]
    assert _same(ds.__getitems__(picks), [ds[i] for i in picks])
    wrapped = TransformedDataset(ds, [Step("normalize", 0, ([0.5], [2.0]))])
    assert _same(wrapped.__getitems__(picks), [wrapped[i] for i in picks])
    held = torch.utils.data.TensorDataset(torch.from_numpy(x.astype(np.float32)), torch.arange(50))
    for a, b in ((ds, held), (torch.utils.data.random_split(ds, [0.6, 0.4], torch.Generator().manual_seed(1))[0],
                              torch.utils.data.random_split(held, [0.6, 0.4], torch.Generator().manual_seed(1))[0])):
        batches = [torch.utils.data.DataLoader(d, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(2))
                   for d in (a, b)]
        assert _same([tuple(t) for t in batches[0]], [tuple(t) for t in batches[1]])
