"""`torch cuda available|device_count|synchronize|manual_seed|memory`: torch.cuda from the shell.

A CPU build answers honestly: `available` prints false and `device_count` 0 (PyTorch's own answers);
`synchronize` and `memory` name a device that is not there, so they fail with device_error (exit 4)
and PyTorch's build in the message, as `--device cuda` does; `manual_seed` is accepted and does
nothing, as torch.cuda.manual_seed does in Python on a machine without CUDA (PyTorch defers it until
CUDA starts). `torch cuda TENSOR` (Tensor.cuda: a copy on the GPU) is still the group word's own op.
"""
import torch

from torchsh.errors import bad_argument
from torchsh.verbs import verb
from torchsh.vocab import device_from_text


@verb("cuda.available() -> bool", category="other", lockfree=True, examples=("torch cuda available",), read_only=True)
def available(ctx):
    """torch.cuda.is_available(): true when this PyTorch build can use a CUDA device on this machine."""
    return torch.cuda.is_available()


@verb("cuda.device_count() -> int", category="other", lockfree=True, examples=("torch cuda device_count",),
      read_only=True)
def device_count(ctx):
    """torch.cuda.device_count(): how many CUDA devices PyTorch sees (0 on a CPU build)."""
    return torch.cuda.device_count()


@verb("cuda.synchronize(Device? device=None) -> None", category="other",
      examples=("torch cuda available | grep -q true && torch cuda synchronize || true",), read_only=True)
def synchronize(ctx, device=None):
    """torch.cuda.synchronize(device): wait until every kernel queued on the device has finished."""
    torch.cuda.synchronize(_cuda(device))


@verb("cuda.manual_seed(int seed) -> None", category="random", examples=("torch cuda manual_seed 0",))
def manual_seed(ctx, seed):
    """torch.cuda.manual_seed(seed): seed the current CUDA device's generator (nothing to seed on a CPU build)."""
    torch.cuda.manual_seed(seed)


@verb("cuda.memory(Device? device=None) -> Json", category="other",
      examples=("torch cuda available | grep -q true && torch cuda memory || true",), read_only=True)
def memory(ctx, device=None):
    """Bytes on a CUDA device: allocated and reserved by PyTorch (now and at peak), free and total.

    allocated is torch.cuda.memory_allocated (tensors), reserved memory_reserved (the caching allocator's
    blocks), free and total torch.cuda.mem_get_info (the whole device, other processes included).
    """
    device = _cuda(device)
    free, total = torch.cuda.mem_get_info(device)
    return {"device": str(device), "allocated": torch.cuda.memory_allocated(device),
            "max_allocated": torch.cuda.max_memory_allocated(device),
            "reserved": torch.cuda.memory_reserved(device), "max_reserved": torch.cuda.max_memory_reserved(device),
            "free": free, "total": total}


def _cuda(device):
    """The CUDA device asked for (default: the current one); device_error when there is none."""
    if device is not None and device.type != "cuda":
        raise bad_argument("%s is not a CUDA device" % device, "give --device cuda or cuda:N, or leave it out")
    device = device_from_text(str(device or "cuda"))
    return device if device.index is not None else torch.device("cuda", torch.cuda.current_device())
