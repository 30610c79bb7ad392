"""load and save by file extension: .npy, .npz, .safetensors, .pt/.pth (weights_only), .csv.

Paths resolve against the caller's working directory. Writes go through fileio.atomic_write (temp
file, fsync, rename), so a failed save never leaves half a file or a temp file. Reads open regular
files only and check headers before allocating (fileio). Nothing is ever unpickled: .pt files go
through torch.load(weights_only=True), whose restricted unpickler builds tensors and plain containers only.
"""
import json
import os
import pickle  # only for its exception type: torch.load(weights_only=True) raises UnpicklingError
import struct
import zipfile

import numpy as np
import torch
from safetensors import SafetensorError

from torchsh import csvfile, fileio, stfile
from torchsh.errors import TorchshError, bad_argument
from torchsh.verbs import verb

# What a corrupt or hostile file makes the readers raise (found by fuzzing damaged files: torch.load's
# weights-only unpickler raises IndexError and KeyError when its stack or memo runs dry, struct.error on
# a cut record, and TypeError or AssertionError when a damaged record rebuilds a tensor from arguments
# of the wrong types). Only library readers run inside these handlers.
READ_ERRORS = (OSError, ValueError, RuntimeError, KeyError, IndexError, TypeError, AssertionError, EOFError,
               NotImplementedError, struct.error, pickle.UnpicklingError, zipfile.BadZipFile, SafetensorError)

FORMATS = (".npy", ".npz", ".safetensors", ".pt", ".pth", ".csv")


def _ext(path):
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise bad_argument("unknown file type %r" % (ext or path), "use one of %s" % " ".join(FORMATS))
    return ext


@verb("load(Path file, *, ScalarType? dtype=None, str? columns=None, bool? header=None, bool no_header=False, "
      "str? delimiter=None) -> Tensor[]", category="files", repeatable=("columns",),
      examples=("printf 'x,y\\n1,2\\n3,4\\n' > xy.csv && torch load xy.csv --columns x --columns y",))
def load(ctx, file, dtype=None, columns=None, header=None, no_header=False, delimiter=None):
    """Load tensors from a file; one handle per line (npz/safetensors/pt dicts: --json keeps the names).
    A .csv gives float32 (or --dtype); its header row is detected (or say --header / --no-header);
    --columns x1,x2 picks columns by name or 0-based index, each further --columns one more tensor.

    `torch load data.csv --columns x1,x2 --columns y` prints two handles. Empty cells read as NaN
    (an error for integer dtypes); a cell that is no number is named by row, line and column.
    """
    ext = _ext(file)
    csv_options = _csv_options(ext, columns, header, no_header, delimiter)
    fileio.regular_file(file)  # a FIFO or /dev/zero would hold the tensor lock forever
    try:
        if ext == ".csv":
            tensors = _read_csv(file, dtype, **csv_options)
            return tensors if csv_options["several"] else tensors[0]
        loaded = _read(file, ext)
    except MemoryError:
        raise TorchshError("out_of_memory", "%s does not fit in memory" % file,
                           "`torch tensors` lists what is held; `torch free` frees it") from None
    except READ_ERRORS as e:
        raise fileio.file_error(file, "read", e) from None
    if dtype is not None:
        loaded = {k: v.to(dtype) for k, v in loaded.items()}
    if list(loaded) == [""]:
        return loaded[""]
    return loaded


def _csv_options(ext, columns, header, no_header, delimiter):
    """The CSV flags, checked: column groups (lists of names or indices), header (None: detect), delimiter."""
    given = [name for name, value in (("columns", columns), ("header", header), ("delimiter", delimiter))
             if value is not None and value is not False] + (["no-header"] if no_header else [])
    if ext != ".csv":
        if given:
            raise bad_argument("--%s applies to .csv files only" % given[0])
        return {}
    if no_header and header:
        raise bad_argument("--header and --no-header contradict each other")
    delimiter = {None: ",", "\\t": "\t", "tab": "\t"}.get(delimiter, delimiter)
    if len(delimiter) != 1 or delimiter in "\"\r\n":
        raise bad_argument("--delimiter must be one character other than a quote or newline, got %r" % delimiter,
                           "e.g. --delimiter ';', or --delimiter tab")
    if isinstance(columns, str) and columns.startswith("["):  # the JSON API's list: {"columns": ["x1,x2", "y"]}
        columns = _json_list(columns)
    groups, several = None, isinstance(columns, list)  # a repeated --columns arrives as a list
    if columns is not None:
        groups = [_column_group(g) for g in (columns if several else [columns])]
    return {"groups": groups, "several": several, "header": False if no_header else header, "delimiter": delimiter}


def _column_group(group):
    """One --columns value (`x1,x2`, `0,3`, or a JSON list of names/indices) as a list of names or indices."""
    items = group if isinstance(group, list) else str(group).split(",")
    items = [str(c).strip() for c in items if str(c).strip()]
    if not items:
        raise bad_argument("--columns needs column names or indices", "e.g. --columns x1,x2 or --columns 0,1")
    return items


def _json_list(text):
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, list):
        raise bad_argument("--columns %s is not a list of column groups" % text[:60], 'e.g. ["x1,x2", "y"]')
    return value


def _read_csv(path, dtype, groups=None, header=None, delimiter=",", several=False):
    """[Tensor] of a CSV, one per column group: parsed as int64 for integer dtypes, else float64, then cast."""
    dtype = dtype or torch.float32
    integer = not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
    arrays = csvfile.load_csv(path, groups, header, delimiter, integer)
    return [torch.from_numpy(a).to(dtype) for a in arrays]


def _read(path, ext):
    if ext == ".npy":
        return {"": _from_numpy(fileio.load_npy(path))}
    if ext == ".npz":
        return {k: _from_numpy(v) for k, v in fileio.load_npz(path).items()}
    if ext == ".safetensors":  # not safetensors' load_file: its tensors map the file (stfile.py says why not)
        with stfile.File(path) as f:
            return {k: f.read(k) for k in f.keys()}
    obj = torch.load(path, weights_only=True, map_location="cpu")
    if isinstance(obj, torch.Tensor):
        return {"": obj}
    if isinstance(obj, dict) and all(isinstance(v, torch.Tensor) for v in obj.values()):
        return dict(obj)
    if isinstance(obj, (list, tuple)) and all(isinstance(v, torch.Tensor) for v in obj):
        return {str(i): v for i, v in enumerate(obj)}
    raise ValueError("the file holds %s, not tensors" % type(obj).__name__)


def _from_numpy(array):
    if not array.flags.writeable:
        array = array.copy()
    try:
        return torch.from_numpy(array)
    except TypeError as e:  # strings, structs, datetimes: numpy dtypes with no tensor twin
        raise ValueError("numpy dtype %s has no PyTorch equivalent (%s)" % (array.dtype, e)) from None


@verb("save(Tensor[] tensors, OutPath file, *, str[]? names=None) -> None", category="files",
      examples=("torch save $(torch tensor '[1,2,3]') t.pt && torch load t.pt",))
def save(ctx, tensors, file, names=None):
    """Save tensors to a file chosen by extension; several tensors need npz, safetensors or pt."""
    ext = _ext(file)
    names = list(names) if names else [str(i) for i in range(len(tensors))]
    if len(names) != len(tensors):
        raise bad_argument("%d names for %d tensors" % (len(names), len(tensors)))
    if ext in (".npy", ".csv") and len(tensors) != 1:
        raise bad_argument("%s holds one tensor, got %d" % (ext, len(tensors)), "use .npz, .safetensors or .pt")
    data = dict(zip(names, [t.detach().cpu() for t in tensors]))
    fileio.atomic_write(file, lambda tmp: _write(tmp, ext, data))
    return None


def _write(path, ext, named):
    values = list(named.values())
    if ext == ".npy":
        np.save(path, _to_numpy(values[0]), allow_pickle=False)
    elif ext == ".npz":
        with open(path, "wb") as f:
            np.savez(f, **{k: _to_numpy(v) for k, v in named.items()})
    elif ext == ".safetensors":
        from safetensors.torch import save_file
        save_file({k: v.contiguous() for k, v in named.items()}, path)
    elif ext == ".csv":
        from torchsh.verbs.tensors import csv_text
        with open(path, "w") as f:
            f.write(csv_text(values[0]))
    else:
        torch.save(values[0] if len(values) == 1 and list(named) == ["0"] else named, path)


def _to_numpy(t):
    if t.dtype == torch.bfloat16:
        raise ValueError("numpy has no bfloat16; save as .safetensors or .pt")
    return t.resolve_conj().numpy()
