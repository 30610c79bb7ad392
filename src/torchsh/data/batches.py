"""Batches of a tensor-backed dataset in order, by slicing its tensors: the batches that
DataLoader(dataset, batch_size) gives with its default collate, value for value and bit for bit, without
fetching the items one at a time (`torch predict` over a table: 20,000 items cost ~70 ms that way).

Tensor-backed: a FileDataset whose fields all hold their tensor in memory (TensorField: a table, a tensor,
a .pt file), under any number of Subsets (a split: indices into the dataset it splits) and TransformedDatasets
whose steps all have a batch form (transforms.TransformedDataset.batchable). Anything else (an image folder,
a memory-mapped .npy, resize) is not: sliced_batches gives None and the caller iterates a DataLoader.
"""
import torch
import torch.utils.data

from torchsh.data.datasets import FileDataset, TensorField
from torchsh.data.transforms import TransformedDataset


def sliced_batches(dataset, batch_size):
    """An iterator of batches (lists of fields, each stacked item first, contiguous and owned: no view of
    the dataset's tensors), or None when the dataset is not tensor-backed."""
    read = _reader(dataset)
    if read is None:
        return None
    length = len(dataset)
    if length:
        dataset[0]  # an item that the steps refuse (its shape, its dtype) is refused as the item path refuses it
    return (read(slice(start, min(start + batch_size, length))) for start in range(0, length, batch_size))


def _reader(dataset):
    """index (a slice, or an int64 tensor of indices) -> the fields of those items, stacked; None when the
    dataset is not tensor-backed."""
    if isinstance(dataset, FileDataset):
        if not dataset.fields or not all(isinstance(f, TensorField) for f in dataset.fields):
            return None
        tensors = [f.tensor for f in dataset.fields]
        # a slice is a view: copied, as collate's stack copies (a model's in-place op must not write the data)
        return lambda index: [t[index].clone(memory_format=torch.contiguous_format) if isinstance(index, slice)
                              else t[index].contiguous() for t in tensors]
    if isinstance(dataset, torch.utils.data.Subset):
        inner = _reader(dataset.dataset)
        indices = _index_tensor(dataset.indices, len(dataset.dataset)) if inner is not None else None
        if indices is None:
            return None
        return lambda index: inner(indices[index])
    if isinstance(dataset, TransformedDataset) and dataset.batchable:
        inner = _reader(dataset.dataset)
        if inner is None:
            return None
        return lambda index: [f.contiguous() for f in dataset.apply_to_batch(inner(index))]
    return None


def _index_tensor(indices, length):
    """A Subset's indices as an int64 tensor, when they are ints within the dataset (a negative one counts
    from the end, as FileDataset's items do); None otherwise (the item path says what is wrong)."""
    if not isinstance(indices, (list, tuple, range)) or not all(type(i) is int for i in indices):
        return None
    t = torch.tensor(indices, dtype=torch.int64)
    if len(t) and not (-length <= int(t.min()) and int(t.max()) < length):
        return None
    return t
