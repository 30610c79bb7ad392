"""Datasets over files, for `torch data open|info|head|split|transform` (verbs/data.py).

Every dataset here is a plain map-style torch.utils.data.Dataset (__len__, __getitem__ -> a tuple of
tensors), so PyTorch's DataLoader takes it as it is, with worker processes too: nothing unpicklable
is opened in __init__ (memory maps and safetensors handles open lazily, once per process).

datasets.py   FileDataset: fields side by side (one per file or column group), each a Field
openers.py    one opener per file type: .npy .npz .safetensors .csv .parquet, and image folders
images.py     the torchvision ImageFolder layout, read with Pillow
transforms.py TransformedDataset: per-item normalize, one_hot, dtype, resize, center_crop (plain torch)
loader.py     Loader: PyTorch's DataLoader with a seeded generator and a resumable position (`data loader`)
"""
