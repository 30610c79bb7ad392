"""load and save by file extension: .npy, .npz, .safetensors, .pt/.pth (weights_only), .csv.

Paths resolve against the caller's working directory. Writes go to a temporary file renamed into
place, so a failed save never leaves half a file. Nothing is ever unpickled.
"""
import os
import pickle  # only for its exception type: torch.load(weights_only=True) raises UnpicklingError
import tempfile

import numpy as np
import torch

from torchsh.errors import TorchshError, bad_argument
from torchsh.verbs import verb

FORMATS = (".npy", ".npz", ".safetensors", ".pt", ".pth", ".csv")


def _ext(path):
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise bad_argument("unknown file type %r" % (ext or path), "use one of %s" % " ".join(FORMATS))
    return ext


@verb("load(Path file, *, ScalarType? dtype=None) -> Tensor[]", category="files")
def load(ctx, file, dtype=None):
    """Load tensors from a file; one handle per line (npz/safetensors/pt dicts: --json keeps the names)."""
    ext = _ext(file)
    try:
        loaded = _read(file, ext)
    except FileNotFoundError:
        raise TorchshError("file_error", "no such file %s" % file) from None
    except (OSError, ValueError, RuntimeError, KeyError, pickle.UnpicklingError) as e:
        raise TorchshError("file_error", "cannot read %s: %s" % (file, str(e).split("\n")[0])) from None
    if dtype is not None:
        loaded = {k: v.to(dtype) for k, v in loaded.items()}
    if list(loaded) == [""]:
        return loaded[""]
    return loaded


def _read(path, ext):
    if ext == ".npy":
        return {"": _from_numpy(np.load(path, allow_pickle=False))}
    if ext == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: _from_numpy(z[k]) for k in z.files}
    if ext == ".safetensors":
        from safetensors.torch import load_file
        return load_file(path)
    if ext == ".csv":
        array = np.loadtxt(path, delimiter=",", dtype=np.float32, ndmin=1, comments="#")
        return {"": torch.from_numpy(array)}
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
    return torch.from_numpy(array)


@verb("save(Tensor[] tensors, Path file, *, str[]? names=None) -> None", category="files")
def save(ctx, tensors, file, names=None):
    """Save tensors to a file chosen by extension; several tensors need npz, safetensors or pt."""
    ext = _ext(file)
    names = list(names) if names else [str(i) for i in range(len(tensors))]
    if len(names) != len(tensors):
        raise bad_argument("%d names for %d tensors" % (len(names), len(tensors)))
    if ext in (".npy", ".csv") and len(tensors) != 1:
        raise bad_argument("%s holds one tensor, got %d" % (ext, len(tensors)), "use .npz, .safetensors or .pt")
    data = [t.detach().cpu() for t in tensors]
    folder = os.path.dirname(file) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".torchsh-", suffix=ext)
    os.close(fd)
    try:
        _write(tmp, ext, dict(zip(names, data)))
        os.replace(tmp, file)
    except Exception as e:
        os.unlink(tmp)
        if isinstance(e, (OSError, ValueError, RuntimeError, TypeError)):
            raise TorchshError("file_error", "cannot write %s: %s" % (file, str(e).split("\n")[0])) from None
        raise
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
