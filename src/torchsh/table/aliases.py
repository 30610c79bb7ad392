"""Shell-friendly and peer-compatible names, one small table: alias -> (target op, fixed flags).

Only names PyTorch does not already have belong here; `torch.t`, `torch.msort` and friends come
from the registry itself.
"""
ALIASES = {
    "smallest_topk": ("topk", {"largest": False}),
    "logsoftmax": ("log_softmax", {}),
}
# NuTorch-style flags that rename a PyTorch flag of one op: op -> {peer flag: (our flag, value map)}
FLAG_ALIASES = {
    "topk": {"smallest": ("largest", {True: False, False: True})},
    "sort": {"descending": ("descending", {})},
}
