"""PyTorch's named values as the shell spells them: dtypes, layouts, memory formats, devices.

One vocabulary for every reader (argument kinds, the census, shell completions, cast aliases).
"""
import torch

from torchsh.errors import bad_argument, device_unavailable

DTYPES = {
    "float32": torch.float32, "float": torch.float32, "float64": torch.float64, "double": torch.float64,
    "float16": torch.float16, "half": torch.float16, "bfloat16": torch.bfloat16,
    "int8": torch.int8, "int16": torch.int16, "short": torch.int16, "int32": torch.int32, "int": torch.int32,
    "int64": torch.int64, "long": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
    "complex64": torch.complex64, "cfloat": torch.complex64, "complex128": torch.complex128,
    "cdouble": torch.complex128, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64,
    "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2,
}
DTYPE_NAMES = {v: k for k, v in reversed(list(DTYPES.items()))}  # canonical name per dtype
LAYOUTS = {"strided": torch.strided, "sparse_coo": torch.sparse_coo}
MEMORY_FORMATS = {"contiguous_format": torch.contiguous_format, "channels_last": torch.channels_last,
                  "preserve_format": torch.preserve_format, "channels_last_3d": torch.channels_last_3d}


def dtype_name(dtype):
    return DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def device_from_text(text):
    """torch.device for a device name, checked against this build and machine (cuda on a CPU build fails here)."""
    try:
        device = torch.device(text)
    except (RuntimeError, ValueError, TypeError) as e:
        raise bad_argument("%r is not a device: %s" % (str(text)[:60], str(e).split("\n")[0][:200]),
                           "devices look like cpu, cuda, cuda:1, mps, meta") from None
    kind, index = device.type, device.index
    if kind in ("cpu", "meta"):
        return device
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count and (index is None or index < count):
            return device
        what = "no CUDA device" if not count else "no device %s (this machine has %d CUDA devices)" % (device, count)
        raise device_unavailable(what, "cuda")
    backend = getattr(torch.backends, kind, None) or getattr(torch, kind, None)
    available = getattr(backend, "is_available", None)
    if available is not None and available() and not index:
        return device
    raise device_unavailable("no %s device" % kind, kind)
