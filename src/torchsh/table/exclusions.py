"""What the op table leaves out, by group, each with its reason. Kept explicit and small.

A function is a candidate when it is public, callable, a function (not a class or module) and in
no group below. `torch ops --excluded [GROUP]` (verbs/meta.py) lists what excluded() finds, so each
group has a short name, its reason (said to users as it stands) and how it is recognised (a name
pattern, a defining module, or a rule on the docstring).
"""
import inspect
import re

import torch

# (group name, reason, regex on the attribute name)
NAME_GROUPS = (
    ("private", "private functions", r"^_"),  # before in-place: `__getattr__`, `_foo_` are private
    ("in-place", "in-place variants (add_, relu_): the shell works on values; use index_put/masked_fill verbs",
     r"_$"),
    ("runtime", "process-wide switches and queries of the daemon itself (threads, autocast, determinism, "
                "printing, RNG state): they would change every caller's session; `torch manual_seed` is a verb",
     r"^(set_|get_|use_deterministic|are_deterministic|is_(anomaly|autocast|grad_enabled|inference_mode|"
     r"deterministic|warn_always|vulkan|distributed)|compile$|compiled_with|export$|vmap$|cond$|while_loop$|"
     r"autocast|clear_autocast|jit$|manual_seed$|seed$|initial_seed$|fork$|wait$|init_num_threads|"
     r"read_vitals|vitals_enabled|prepare_multiprocessing|profiler_|thread_safe_generator|classproperty$|"
     r"typename$|has_)"),
    ("interop", "Python-object and file interop (numpy, DLPack, buffers, pickles): `torch tensor`, "
                "`torch load` and `torch save` are the shell's way in and out",
     r"^(load|save|from_file|from_numpy|frombuffer|from_dlpack|to_dlpack|as_tensor|asarray|is_tensor|"
     r"is_storage)$"),
    ("torchscript", "TorchScript and dispatcher internals (IR parsing, symbolic ints, torch-function hooks)",
     r"^(import_ir_module|merge_type_from_type_comment|parse_ir|parse_schema|parse_type_comment|"
     r"unify_type_list|sym_|boolean_dispatch|assert_int_or_pair|handle_torch_function)"),
    ("quantization", "quantization internals (quantized tensors cannot be made from a shell)",
     r"^(quantize|dequantize|q_|fake_quantize|fbgemm|quantized_|choose_qparams|int_repr|empty_quantized|"
     r"fused_moving_avg_obs_fake_quant)"),
    ("sparse", "sparse-layout internals (sparse tensors cannot be made from a shell)",
     r"^(sparse_|to_sparse|smm|sspaddmm|hspmm|spmm|saddmm|dsmm|hsmm|(c?col|c?row)_indices_copy|"
     r"indices_copy|values_copy)"),
    ("backend", "backend-specific kernels and autograd internals (cuDNN, MIOpen, oneDNN, *_backward)",
     r"(cudnn|miopen|mkldnn|mps|xnnpack|native_|_backward$|_jvp$|batch_norm_backward|batch_norm_elemt|"
     r"batch_norm_gather|batch_norm_stats|batch_norm_update_stats)"),
)
# Functions whose defining module says what they are (checked before the docstring rules)
MODULE_GROUPS = {
    "torch._linalg_utils": ("removed", "removed since PyTorch 1.9 (eig, lstsq, solve…): they only raise; "
                                       "the torch.linalg forms are in the table"),
}
DEPRECATED = ("deprecated", "deprecated in PyTorch's own docs (torch.qr, torch.svd, torch.norm…): the "
                            "replacements named there are in the table; peer names map to them in aliases.py")
TWIN = ("twin", "undocumented torch.* twins of nn.functional ops (torch.kl_div takes an int reduction): "
                "the documented nn.functional form is the one in the table, and bare names reach it")
DEPRECATED_RE = re.compile(r"\.\. (deprecated|warning)::\s*\n?\s*.*deprecated|This function is deprecated", re.I)


def excluded_reason(name):
    """The reason a name is left out by NAME_GROUPS, or None."""
    group = excluded_group(name)
    return group and group[1]


def excluded_group(name, prefix="", fn=None):
    """(group, reason) for an excluded function, or None when it belongs in the table."""
    for group, reason, pattern in NAME_GROUPS:
        if re.search(pattern, name):
            return group, reason
    if fn is None:
        return None
    module = getattr(fn, "__module__", None) or ""
    if module in MODULE_GROUPS:
        return MODULE_GROUPS[module]
    doc = getattr(fn, "__doc__", None) or ""
    if DEPRECATED_RE.search(doc[:2000]):
        return DEPRECATED
    if prefix == "" and not doc and hasattr(torch.nn.functional, name):
        return TWIN
    return None


def is_function(fn):
    if fn is None or not callable(fn) or inspect.isclass(fn) or inspect.ismodule(fn):
        return False
    return inspect.isbuiltin(fn) or inspect.isfunction(fn) or type(fn).__name__ == "builtin_function_or_method"


def is_candidate(prefix, attr, fn):
    return is_function(fn) and excluded_group(attr, prefix, fn) is None


def excluded(namespaces):
    """{group: (reason, [full names])} over the given (prefix, module, …) namespaces."""
    out = {}
    for prefix, module, *_ in namespaces:
        for attr in sorted(dir(module)):
            fn = getattr(module, attr, None)
            if not is_function(fn):
                continue
            group = excluded_group(attr, prefix, fn)
            if group:
                out.setdefault(group[0], (group[1], []))[1].append(prefix + attr)
    return out
