"""Training checkpoints without pickle: `torch checkpoint save FILE M [OPT] [SCHED]` / `checkpoint load …`.

The file is models/checkpoint.py's format: one .safetensors file with the model's state_dict, the optimizer's
and scheduler's state, the CPU RNG state, and JSON metadata. Loading restores all of it, so training resumes
exactly where it stopped: 10 steps, save, a fresh daemon, load, 10 more equals 20 uninterrupted steps bit
for bit. Load is atomic: the file is checked against the model, optimizer and scheduler before any changes.
Loading the RNG state is on by default (--rng false keeps the daemon's current random stream).

A `.pt`, `.pth` or `.ckpt` name is refused, not written: those names promise a torch.save pickle (Python's
torch.load, Lightning), and this file is safetensors, which torch.load rejects. A real `.pt` of the whole
checkpoint would carry the optimizer's and scheduler's state dicts through pickle, which weights_only reads
only as far as their values are plain; the safetensors file carries the same state with none, and loads
exactly. The weights alone as a `.pt` Python reads are `torch nn save M model.pt`.
"""
import os

from torchsh.errors import bad_argument
from torchsh.formats import stfile
from torchsh.models import checkpoint
from torchsh.verbs import verb

PICKLE_NAMES = (".pt", ".pth", ".ckpt")  # what torch.save (and Lightning) write: a pickle in a zip


@verb("checkpoint.save(OutPath file, Module model, Optimizer? optimizer=None, Scheduler? scheduler=None) -> None",
      category="nn",
      examples=("m=$(torch nn linear 2 1); torch checkpoint save ck.safetensors $m $(torch optim sgd $m --lr 0.1)",))
def save(ctx, file, model, optimizer=None, scheduler=None):
    """Save model, optimizer and scheduler state (and the RNG state) to one .safetensors file, atomically."""
    if os.path.splitext(file)[1].lower() in PICKLE_NAMES:
        raise bad_argument("a checkpoint is a .safetensors file, not %s (torch.load could not read it)"
                           % os.path.basename(file),
                           "name it %s.safetensors; `torch nn save M model.pt` writes the weights as a .pt"
                           % os.path.splitext(os.path.basename(file))[0])
    stfile.write(file, *checkpoint.capture(model, optimizer, scheduler))


@verb("checkpoint.load(Path file, Module model, Optimizer? optimizer=None, Scheduler? scheduler=None, *, "
      "bool rng=True) -> None", category="nn",
      examples=("m=$(torch nn linear 2 1); torch checkpoint save ck.safetensors $m && "
                "torch checkpoint load ck.safetensors $m",))
def load(ctx, file, model, optimizer=None, scheduler=None, rng=True):
    """Restore a checkpoint into a model built the same way (and its optimizer and scheduler); strict and atomic."""
    checkpoint.restore(file, model, optimizer, scheduler, rng)
