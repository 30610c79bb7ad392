"""The daemon's C heap (glibc's malloc): what it keeps of freed memory, and giving that back when it counts.

Tensors' memory comes from malloc. An eager training step frees and makes the same tensors every step, and
what glibc does with freed memory decides whether each step faults its pages in again (keep_freed_memory);
the memory budget reads RSS, which counts what the heap keeps, so it gives that back before it refuses
anything (malloc_trim).
"""
import os

# glibc's mallopt parameters, and what the daemon sets them to (keep_freed_memory)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20   # blocks this big or smaller come from the heap, not a mmap of their own
TRIM_THRESHOLD = 256 << 20  # free memory at the heap's top kept for reuse, up to this much
MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_freed_memory(environ=os.environ):
    """Keep the memory of freed tensors in the heap for the next step's, instead of giving it back to the
    kernel and faulting it in again (glibc). An eager step frees and makes the same tensors every time (Adam's
    temporaries: 1 MB each for an MLP's 512x512 weight); with glibc's defaults the tensor thread's heap gave
    them back each step, and a `fit` of the bench's MLP ran 0.21 s an epoch against 0.14 s so tuned (PyTorch's
    own tuning guide says the same of jemalloc and tcmalloc). RSS then counts freed memory, up to
    TRIM_THRESHOLD: the budget trims (malloc_trim) before it refuses anything, so no op is refused for it.
    -> the settings, or None when the user set glibc's own variables (theirs stand) or this is not glibc."""
    if _users_own(environ):
        return None
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        done = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    except (OSError, AttributeError):
        return None
    return {"mmap_threshold": MMAP_THRESHOLD, "trim_threshold": TRIM_THRESHOLD} if done else None


def child_environ(environ=os.environ):
    """glibc's own variables for the same settings, for a child that trains (a rank of `fit --nproc_per_node`):
    mallopt holds for this process only, and a rank's eager steps free and make tensors as the daemon's do.
    -> {} when the user set either variable (theirs pass down as they are)."""
    if _users_own(environ):
        return {}
    return dict(zip(MALLOC_ENV, (str(MMAP_THRESHOLD), str(TRIM_THRESHOLD))))


def _users_own(environ):
    """True when the user set either of glibc's variables: theirs stand, and none of ours is added."""
    return any(name in environ for name in MALLOC_ENV)


def malloc_trim():
    """Give freed heap pages back to the kernel, so RSS says what is really in use (glibc only)."""
    try:
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
