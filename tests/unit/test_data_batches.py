"""A tensor-backed dataset's batches by slicing (data/batches.py) are DataLoader's, bit for bit: on a split
part (a Subset of a Subset) of a table with a one-hot column, standardized, its label one-hot encoded; and
`torch predict`'s outputs over them are those of the item-by-item path. Other datasets fall back."""
import numpy as np
import pytest
import torch
import torch.utils.data
from PIL import Image

from torchsh.data import batches, openers
from torchsh.data.batches import sliced_batches
from torchsh.data.standardize import learn
from torchsh.data.transforms import Step, TransformedDataset
from torchsh.train import predict


def _table(tmp_path, n=61):
    g = np.random.default_rng(0)
    path = tmp_path / "t.csv"
    with open(path, "w") as f:
        f.write("a,color,b,species\n")
        for i in range(n):
            f.write("%.4f,%s,%d,%s\n" % (g.normal(0, 3), ("red", "blue", "green")[i % 3], i % 5, "xyz"[i % 2]))
    return openers.open_dataset([str(path)], openers.Options(target="species", onehot="color"))


def _split_part(tmp_path):
    """Part of a part of the table, standardized (float64 math) and its label one-hot, then float64 features."""
    table = _table(tmp_path)
    part = torch.utils.data.random_split(table, [0.7, 0.3], generator=torch.Generator().manual_seed(1))[0]
    part = torch.utils.data.random_split(part, [0.6, 0.4], generator=torch.Generator().manual_seed(2))[1]
    mean, std = learn(part, 0)
    steps = [Step("one_hot", 1, (2,)), Step("standardize", 0, (mean, std)), Step("dtype", 0, (torch.float64,)),
             Step("normalize", 0, ([0.5], [3.0]))]
    return TransformedDataset(part, steps)


class _ItemByItem(torch.utils.data.Dataset):
    """The same items, through a dataset the slicing path does not know (the per-item path)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        return self.dataset[i]


def test_sliced_batches_are_the_dataloader_s_bit_for_bit_on_a_standardized_one_hot_split_part(tmp_path):
    ds = _split_part(tmp_path)
    sliced = sliced_batches(ds, 4)
    assert sliced is not None
    sliced = list(sliced)
    loaded = list(torch.utils.data.DataLoader(ds, batch_size=4))
    assert len(sliced) == len(loaded) == 5  # 13 items: the last batch is short, as DataLoader's
    for mine, theirs in zip(sliced, loaded):
        assert len(mine) == len(theirs) == 2
        for a, b in zip(mine, theirs):
            assert a.dtype == b.dtype and a.shape == b.shape and a.is_contiguous()
            assert torch.equal(a, b)


def test_a_sliced_batch_is_a_copy_not_a_view_of_the_dataset(tmp_path):
    table = _table(tmp_path)
    before = table.fields[0].tensor.clone()
    for features, _ in sliced_batches(table, 8):
        features.add_(1.0)  # a model's in-place op on its input
    assert torch.equal(table.fields[0].tensor, before)


def test_predict_gives_the_item_path_s_outputs_bit_for_bit_and_the_same_random_state(tmp_path):
    ds = _split_part(tmp_path)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).double()
    states, outputs = [], []
    for dataset in (ds, _ItemByItem(ds)):
        torch.manual_seed(7)
        outputs.append(predict.run(model, dataset, 3))
        states.append(torch.get_rng_state())
    fast, slow = outputs
    assert torch.equal(fast.output, slow.output) and fast.classify == slow.classify
    assert fast.keys == slow.keys and len(set(fast.keys)) == len(ds)
    assert torch.equal(states[0], states[1])  # DataLoader's one draw of a base seed, taken either way


def test_datasets_that_are_not_tensor_backed_fall_back_to_the_item_path(tmp_path):
    (tmp_path / "img" / "cat").mkdir(parents=True)
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "img" / "cat" / "0.png")
    images = openers.open_dataset([str(tmp_path / "img")], openers.Options())
    table = _table(tmp_path)
    resized = TransformedDataset(table, [Step("resize", 0, ((2,),))])
    for dataset in (images, resized, _ItemByItem(table)):
        assert sliced_batches(dataset, 2) is None


def _same_batches(mine, theirs):
    assert len(mine) == len(theirs) > 0
    for a_batch, b_batch in zip(mine, theirs):
        assert type(a_batch) is type(b_batch) and len(a_batch) == len(b_batch)
        for a, b in zip(a_batch, b_batch):
            assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def _mapped_npy(tmp_path):
    """Two memory-mapped .npy fields, one big-endian (read as native, as the item path reads it)."""
    g = np.random.default_rng(3)
    np.save(tmp_path / "x.npy", g.standard_normal((13, 3)).astype(">f4"))
    np.save(tmp_path / "y.npy", g.integers(0, 4, 13))
    return openers.open_dataset([str(tmp_path / "x.npy"), str(tmp_path / "y.npy")], openers.Options())


DATASETS = {"a standardized one-hot split part": _split_part, "mapped npy": _mapped_npy,
            "a TensorDataset": lambda _: torch.utils.data.TensorDataset(torch.randn(13, 3), torch.arange(13))}


@pytest.mark.parametrize("make", DATASETS.values(), ids=list(DATASETS))
def test_a_shuffled_loader_gathers_pytorchs_batches_bit_for_bit_epoch_after_epoch_and_resumed(tmp_path, make):
    from torchsh.data.loader import Loader
    ds = make(tmp_path)
    generator = torch.Generator().manual_seed(5)
    theirs = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True, generator=generator)
    loader = Loader(ds, batch_size=4, shuffle=True, seed=5)
    assert isinstance(loader.loader.dataset, batches.Gathered)  # the fast path is the one under test
    for _ in range(2):  # reshuffled each epoch, as PyTorch's
        mine = list(iter(loader.next_batch, None))
        _same_batches(mine, list(theirs))
    first = loader.next_batch()
    state = loader.state_dict()
    rest = list(iter(loader.next_batch, None))
    again = Loader(ds, batch_size=4, shuffle=True, seed=5)
    again.load_state_dict(state)
    _same_batches([first] + list(iter(again.next_batch, None)), [first] + rest)


def test_a_loader_over_a_dataset_it_cannot_gather_reads_item_by_item(tmp_path):
    from torchsh.data.loader import Loader
    ds = _ItemByItem(_split_part(tmp_path))
    loader = Loader(ds, batch_size=4, shuffle=True, seed=5)
    assert loader.loader.dataset is ds
    _same_batches(list(iter(loader.next_batch, None)),
                  list(torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True,
                                                   generator=torch.Generator().manual_seed(5))))
