"""Datasets over files, for `torch data open|info|head|split|transform|sql|tokenize` (verbs/data*.py).

Every dataset here is a plain map-style torch.utils.data.Dataset (__len__, __getitem__ -> a tuple of
tensors), so PyTorch's DataLoader takes it as it is, with worker processes too: nothing unpicklable
is opened in __init__ (memory maps and safetensors handles open lazily, once per process).

Data bigger than memory stays map-style: its rows live in *pieces* (pieces.py: row groups, record batches,
shards) read on demand into a bounded cache, its length from the files' metadata, and the loader's order is
piece-aware (piecesampler.py), so resume, workers and ranks stay index arithmetic.

datasets.py      FileDataset: fields side by side (one per file or column group), each a Field
openers.py       one opener per file type: .npy .npz .safetensors .csv .parquet .arrow .tar, image folders
shards.py        quoted globs and braces expanded as bash would ('train-{000..127}.tar')
pieces.py        PieceCache, a dataset's piece boundaries, the cache sized for a loader's window
piecetables.py   a table read by pieces (the fields of a Parquet set or Arrow files), as tables.py reads one
parquetstream.py a Parquet set read by row group (`--stream`); arrowfiles.py: Arrow IPC and `datasets` folders
streaminfo.py    what `data info` shows of a set read by pieces, from its metadata
tarshards.py     WebDataset shards, indexed by their headers, decoded per item
sql.py           `data sql`: a DuckDB query written to the private scratch folder (scratchfiles.py), read as Parquet
tokenize.py      `data tokenize`: text columns (textsources.py) into a token file (tokenfile.py), packed or not
chat.py          `--format chat`: JSONL lines through a chat template, tokenized when read
images.py        the torchvision ImageFolder layout, read with Pillow
transforms.py    TransformedDataset: per-item normalize, one_hot, dtype, resize, center_crop (plain torch)
loader.py        Loader: PyTorch's DataLoader with a seeded generator and a resumable position (`data loader`)
piecesampler.py  the loader's order over pieces: permuted pieces, shuffled windows, workers and rank shares
workererrors.py  a worker's TorchshError brought back as itself
"""
