"""`torch fit`'s checkpoints (`last`, `best`) and `--resume`: the checkpoint format of `torch checkpoint`
(model, optimizer, scheduler, CPU RNG in one .safetensors file with JSON metadata, so `torch checkpoint
load` reads them) plus a `fit` part: the GradScaler, both loaders' states (epoch, position, the shuffle
generator), the CUDA RNG states and the run's progress. Restoring all of it continues a run bit for
bit, even from the middle of an epoch.
"""
import dataclasses
import os

import torch

from torchsh.errors import TorchshError
from torchsh.formats import statefile as state_file, stfile
from torchsh.models import checkpoint


def source(plan):
    """The checkpoint to resume from: --resume PATH, or with auto the log folder's `last` when there is one."""
    if plan.resume is None:
        return None
    if plan.resume == "auto":
        last = os.path.join(plan.log, "last.safetensors")
        return last if os.path.exists(last) else None
    return plan.resume


def save(path, plan, scaler, progress):
    """A `torch checkpoint` of the model, optimizer and scheduler, with the run's own `fit` part."""
    tensors, meta = checkpoint.capture(plan.model, plan.optimizer, plan.sched)
    fit = {"progress": dataclasses.asdict(progress), "scaler": scaler.state_dict(),
           "loader": plan.loader.state_dict(), "val_loader": plan.val.state_dict() if plan.val else None,
           "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else []}
    meta["fit"] = state_file.encode(fit, "fit", tensors)
    stfile.write(path, tensors, meta)


def restore(path, plan, scaler, progress_type):
    """Load model, optimizer, scheduler and RNG (checked and atomic, as `torch checkpoint load`), then the rest."""
    checkpoint.restore(path, plan.model, plan.optimizer, plan.sched, rng=True)
    tensors, meta = stfile.read(path)
    if "fit" not in meta:
        raise TorchshError("state_mismatch", "%s is a checkpoint of `torch checkpoint save`, not of `torch fit`" % path,
                           "resume from a fit log folder's last.safetensors")
    fit = state_file.decode(meta["fit"], tensors)
    loaders_and_scaler(fit, plan, scaler, "make the loaders as in the first run")
    if fit["cuda_rng"]:
        torch.cuda.set_rng_state_all(fit["cuda_rng"])
    return progress_type(**fit["progress"])


def loaders_and_scaler(fit, plan, scaler, hint):
    """A fit checkpoint's loader positions and GradScaler into the plan's (state_mismatch when they don't fit)."""
    try:
        plan.loader.load_state_dict(fit["loader"])
        if plan.val is not None and fit["val_loader"] is not None:
            plan.val.load_state_dict(fit["val_loader"])
    except ValueError as e:
        raise TorchshError("state_mismatch", "the checkpoint's loader does not fit: %s" % e, hint) from None
    if fit["scaler"]:
        scaler.load_state_dict(fit["scaler"])
