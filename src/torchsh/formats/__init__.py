"""Files of tensors: one row per extension (extensions.py) says what a file holds, how it is read and written.

extensions.py   THE table: .npy .npz .safetensors .pt .pth .csv .parquet; the guarded read, the atomic write
npyfile.py      .npy and .npz (each header checked before anything is allocated: fileio.check_npy_header)
stfile.py       .safetensors: read into memory of its own (never mapped), written with torchsh's JSON metadata
ptfile.py       .pt/.pth through torch.load(weights_only=True): nothing is unpickled
csvfile.py      .csv: numpy's reader, the csv module where it refuses; a tensor as CSV text
parquetfile.py  .parquet through pyarrow (the `parquet` extra)
flags.py        --columns, --header, --delimiter: the flags that pick and parse a table's columns
statedicts.py   state dicts as real checkpoints hold them, for `nn load` (pt2weights.py: a torch.export archive's)
export.py       a model out as .onnx or .pt2 (`model export`), checked against PyTorch before it takes its name
preprocessed.py a model's card's preprocessing baked in front of it for export: the graph takes raw rows
"""
