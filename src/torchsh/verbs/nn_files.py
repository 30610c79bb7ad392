"""Module weights in files: `nn save M FILE.safetensors|.pt|.pth`, `nn load M FILE`, `nn jit_load FILE`.

Files hold PyTorch's state_dict key names (`0.weight`, `bn.running_mean`, buffers included), so a
file saved here loads in Python with `model.load_state_dict(safetensors.torch.load_file(f))` or
`model.load_state_dict(torch.load(f, weights_only=True))`, and the other way round. A `.pt`/`.pth` is
written by torch.save(model.state_dict()) itself: tensors in an OrderedDict, which weights_only reads.
Saves are atomic (fileio.atomic_write: temp file, fsync, rename) and replace an existing file, as `>` and
torch.save do. Loading is strict and atomic: a missing, unexpected or mis-shaped key is named and nothing
changes. `.pt`/`.pth` files are read with weights_only=True; nothing is unpickled.
"""
import os

import torch

from torchsh import fileio
from torchsh.classes import state as state_file
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import extensions, ptfile, stfile
from torchsh.verbs import verb


@verb("nn.save(Module model, OutPath file) -> None", category="nn",
      examples=("torch nn save $(torch nn linear 3 2) model.safetensors",
                "torch nn save $(torch nn linear 3 2) model.pt && "
                "python -c 'import torch; print(list(torch.load(\"model.pt\", weights_only=True)))'"))
def nn_save(ctx, model, file):
    """Save the model's state_dict (parameters and buffers) to .safetensors, .pt or .pth, atomically.
    A .pt/.pth is Python's torch.save(model.state_dict()): torch.load(FILE, weights_only=True) reads it."""
    if file.endswith((".pt", ".pth")):
        state = model.state_dict()
        fileio.atomic_write(file, lambda tmp: torch.save(state, tmp))
    elif file.endswith(".safetensors"):
        stfile.write(file, state_file.model_tensors(model))
    else:
        raise bad_argument("nn save writes .safetensors, .pt or .pth files, not %s" % os.path.basename(file),
                           "name the file MODEL.safetensors, or MODEL.pt for Python's torch.load")
    return None


@verb("nn.load(Module model, Path file) -> None", category="nn",
      examples=("m=$(torch nn linear 3 2); "
                "torch nn save $m model.safetensors && torch nn load $(torch nn linear 3 2) model.safetensors",))
def nn_load(ctx, model, file):
    """Load a state_dict into the model (strict, atomic). Reads .safetensors, and .pt/.pth with weights_only."""
    if file.endswith((".pt", ".pth")):
        tensors = _read_pt(file)
    else:
        tensors, _ = stfile.read(file)
    with torch.no_grad():
        state_file.load_model(model, tensors)
    return None


def _read_pt(file):
    obj = extensions.read(file, ptfile.read_object)  # restricted unpickler: tensors and plain data
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise TorchshError("file_error", "%s holds %s, not a state_dict" % (file, type(obj).__name__))
    return dict(obj)


@verb("nn.jit_load(Path file) -> Module", category="nn",
      examples=("python -c 'import torch; "
                'torch.jit.script(torch.nn.Linear(2, 1)).save("lin.ts")\' && torch nn jit_load lin.ts',))
def jit_load(ctx, file):
    """Load a TorchScript model saved from Python (torch.jit.save); runs with `torch forward`.

    TorchScript archives hold TorchScript code and tensors; torch.jit.load runs no Python pickle code.
    """
    fileio.regular_file(file)
    try:
        return torch.jit.load(file, map_location=ctx.device or "cpu")
    except (RuntimeError, ValueError) as e:
        raise TorchshError("file_error", "cannot load %s as TorchScript: %s" % (file, str(e).split("\n")[0])) from None
