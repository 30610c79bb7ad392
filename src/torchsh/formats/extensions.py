"""THE table of tensor files: one row per extension, with what a file of it holds, its reader and its writer.

A new format is one row here, its reader and writer beside the others in this package.
- An array file's read(path) gives {name: Tensor}, "" naming the one tensor of a file that holds one.
- A table's (table=True: csv, parquet) read(path, groups, dtype, **options) gives [Tensor], one per column
  group (formats/flags.py checks the flags that pick them).
- write(path, named) writes {name: Tensor} to path: the temp file fileio.atomic_write renames into place.
`torch load` and `torch save` take the formats that have both (what one writes, the other reads back);
`torch data open` opens its own list (data/openers.py), mapping .npy and reading .safetensors lazily.
"""
import os
import pickle  # only for its exception type: torch.load(weights_only=True) raises UnpicklingError
import struct
import zipfile
from dataclasses import dataclass
from typing import Callable

from safetensors import SafetensorError

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import csvfile, imagefile, npyfile, parquetfile, ptfile, stfile


@dataclass(frozen=True)
class Format:
    ext: str
    holds: str                   # what one file of it holds, in words
    read: Callable               # the reader (see above: array files and tables differ)
    write: Callable = None       # (path, {name: Tensor}); None: not written
    single: bool = False         # it holds one tensor: a save of several is refused
    table: bool = False          # columns: read takes groups, a dtype and the table's own options


_PT = dict(holds="a tensor, or a dict or list of tensors (torch.save; read with weights_only)",
           read=ptfile.read, write=ptfile.write)
FORMATS = {f.ext: f for f in (
    Format(".npy", "one array", npyfile.read_npy, npyfile.write_npy, single=True),
    Format(".npz", "named arrays (a zip of .npy files)", npyfile.read_npz, npyfile.write_npz),
    Format(".safetensors", "named tensors, and JSON metadata", stfile.read_tensors, stfile.write_named),
    Format(".pt", **_PT),
    Format(".pth", **_PT),
    Format(".csv", "a table of numbers, a header row optional (at most 2-D)", csvfile.read, csvfile.write,
           single=True, table=True),
    Format(".parquet", "a table of named columns (pyarrow: the `parquet` extra)", parquetfile.read, table=True),
) + tuple(Format(ext, "an image: C×H×W uint8 (Pillow: the `images` extra)", imagefile.read)
          for ext in imagefile.EXTENSIONS)}
SAVED = tuple(ext for ext, f in FORMATS.items() if f.write)  # what `torch save` writes and `torch load` reads
LOADED = SAVED + imagefile.EXTENSIONS  # and images, which `torch value T --format png` writes

# What a corrupt or hostile file makes the readers raise (found by fuzzing damaged files: torch.load's
# weights-only unpickler raises IndexError and KeyError when its stack or memo runs dry, struct.error on
# a cut record, and TypeError or AssertionError when a damaged record rebuilds a tensor from arguments
# of the wrong types). Only library readers run inside read()'s handlers.
READ_ERRORS = (OSError, ValueError, RuntimeError, KeyError, IndexError, TypeError, AssertionError, EOFError,
               NotImplementedError, struct.error, pickle.UnpicklingError, zipfile.BadZipFile, SafetensorError)


def saved(path, among=SAVED):
    """The row of a file `torch save` writes (`torch load` reads: among=LOADED), by its extension;
    bad_argument for others."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in among:
        raise bad_argument("unknown file type %r" % (ext or path), "use one of %s" % " ".join(among))
    return FORMATS[ext]


def read(path, reader, *args, **options):
    """reader(path, …) on a regular file (a FIFO or /dev/zero would hold the tensor lock forever): what a
    damaged file makes it raise is a file_error naming the path, a file too big for memory out_of_memory."""
    fileio.regular_file(path)
    try:
        return reader(path, *args, **options)
    except MemoryError:
        raise TorchshError("out_of_memory", "%s does not fit in memory" % path,
                           "`torch tensors` lists what is held; `torch free` frees it") from None
    except READ_ERRORS as e:
        raise fileio.file_error(path, "read", e) from None


def write(path, fmt, named):
    """fmt's writer into a temp file that becomes path durably, or leaves nothing (fileio.atomic_write)."""
    fileio.atomic_write(path, lambda tmp: fmt.write(tmp, named))
