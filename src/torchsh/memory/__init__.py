"""The memory budget: refuse an op whose output would not fit, before it allocates.

Without it an op such as `torch zeros '[30000,30000]'` (3.6 GB) in a 2 GiB container gets the daemon
OOM-killed and every object it holds is lost; with it the op is refused with `out_of_memory` and the
daemon lives. The budget is TORCHSH_MAX_MEMORY / `torchd --max-memory` (512M, 2G, 2GiB, 50%, none),
by default half of the machine's memory: min(physical RAM, the cgroup's limit).

"Memory in use" is the daemon's resident set (RSS), not the bytes behind handles: RSS is what the
kernel's OOM killer counts, and it includes what handles do not (PyTorch itself, autograd graphs,
allocator caches). An op is admitted when RSS + its output fits the budget.

Sizes come from, cheapest first:
- a bound computed from the inputs' sizes and the numeric arguments (a few µs; the op's ATen tags say
  when the output is no bigger than a broadcast of the inputs, a reduction of them, or a view);
- when that bound does not fit, the op itself run on meta copies of its inputs (shape inference; no
  data is touched, no RNG advanced); views of the inputs count as nothing;
- for the few ops whose output size depends on the data (bincount, one_hot, repeat_interleave), the
  data, and a formula for combinations (no meta kernel; it builds an n ** r grid first);
- for verbs: `load` by the file's size, `contiguous`/`to`/`value` by shape;
- for modules, whatever face builds them (a layer, `nn sequential`'s words, a sweep's templates, `model
  open`): built on the meta device, parameters and buffers summed; for an optimizer, the state a twin of it
  over meta parameters makes in one step (modules.py), admitted when it is built and at its first step;
- otherwise the op runs, and an allocation failure (MemoryError, PyTorch's allocator error, CUDA OOM)
  becomes `out_of_memory` too (see allocation_failure).
For CUDA outputs the budget is the device's free memory (torch.cuda.mem_get_info plus what PyTorch's
caching allocator holds unused); TORCHSH_MAX_MEMORY is about host memory.
"""
from torchsh.memory.budget import (DEFAULT, ENV, Budget, allocation_failure, cgroup_limit, human,
                                   machine_memory, over_budget, parse_size, physical_memory, rss_bytes)
from torchsh.memory.heap import keep_freed_memory
from torchsh.memory.modules import admit_first_step, admit_module, admit_optimizer

__all__ = ["DEFAULT", "ENV", "Budget", "admit_first_step", "admit_module", "admit_optimizer", "allocation_failure",
           "cgroup_limit", "human", "keep_freed_memory", "machine_memory", "over_budget", "parse_size",
           "physical_memory", "rss_bytes"]
