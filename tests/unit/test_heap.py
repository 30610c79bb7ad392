"""The daemon's heap keeps freed tensors' memory for the next step (memory/heap.py): glibc's thresholds are set
unless the user set glibc's own variables, and the memory the heap keeps is given back when the budget asks."""
import os
import subprocess
import sys

from torchsh.memory import heap

# a fresh process's view of its heap: mallinfo2().fordblks is the free memory the heap keeps
MALLINFO = """
import ctypes, torch
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
"""


def test_the_thresholds_are_left_alone_when_the_user_set_glibcs_own_variables():
    assert heap.keep_freed_memory({"MALLOC_TRIM_THRESHOLD_": "0"}) is None  # theirs stand: nothing set


def test_a_freed_tensor_stays_in_the_heap_and_malloc_trim_gives_it_back():
    """In a fresh process (the thresholds are process-wide: set in the test process, they would change what
    other tests see of its memory): the thresholds set, an 8 MB tensor freed leaves its memory in the heap
    (mallinfo2's free bytes), where glibc's defaults would have unmapped it; malloc_trim returns it."""
    code = MALLINFO + """
from torchsh.memory import heap
assert heap.keep_freed_memory({}) == {"mmap_threshold": 32 << 20, "trim_threshold": 256 << 20}
x = torch.ones(2 << 20)  # 8 MB
del x
kept = libc.mallinfo2().fordblks
heap.malloc_trim()
print(kept, libc.mallinfo2().fordblks)
"""
    kept, after = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                          check=True).stdout.split())
    assert kept >= 8 << 20 and after < kept


def test_a_child_that_trains_gets_glibcs_variables_and_its_heap_keeps_freed_memory():
    """mallopt holds for the daemon only: a rank of `fit --nproc_per_node` gets the same settings as glibc's
    own variables, which its heap then follows; a user's own variables pass down untouched."""
    assert heap.child_environ({"MALLOC_MMAP_THRESHOLD_": "65536"}) == {}
    env = dict(os.environ, **heap.child_environ({}))
    code = MALLINFO + """
x = torch.ones(2 << 20)  # 8 MB
del x
print(libc.mallinfo2().fordblks)
"""
    kept = int(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True).stdout)
    assert kept >= 8 << 20
