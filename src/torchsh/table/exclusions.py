"""What the op table leaves out, by group, each with its reason. Kept explicit and small.

A function is a candidate when it is public, callable, a function (not a class or module) and
in no group below.
"""
import inspect
import re

# name patterns -> reason
EXCLUDED_PATTERNS = (
    (r"_$", "in-place variants (add_, relu_): the shell works on values; use index_put/masked_fill verbs"),
    (r"^_", "private functions"),
    (r"^(is_|set_|get_|use_deterministic|are_deterministic|compile|export|vmap|cond|autocast|"
     r"jit|load|save|manual_seed|seed|initial_seed|typename|compiled_with_cxx11_abi|"
     r"sym_|fork|wait|from_file|from_numpy|frombuffer|from_dlpack|as_tensor|asarray|"
     r"set_printoptions|import_ir_module|merge_type_from_type_comment|parse_ir|parse_schema|"
     r"unify_type_list|has_|init_num_threads|read_vitals|vitals_enabled|can_cast|promote_types|"
     r"result_type|empty_strided|range$)",
     "process/runtime controls, Python-object interop and queries handled by verbs or meaningless from a shell"),
    (r"^(quantize|dequantize|q_|fake_quantize|fbgemm|quantized_|choose_qparams|int_repr)", "quantization internals"),
    (r"^(sparse_|to_sparse|smm|sspaddmm|hspmm|spmm|saddmm)", "sparse-layout internals"),
    (r"(cudnn|miopen|mkldnn|mps|xnnpack|native_|_backward$|_jvp$|batch_norm_backward|"
     r"batch_norm_elemt|batch_norm_gather|batch_norm_stats|batch_norm_update_stats)",
     "backend-specific kernels and autograd internals"),
)
# functions PyTorch marks deprecated in their docstrings are left out too (see is_candidate)
DEPRECATED_RE = re.compile(r"\.\. (deprecated|warning)::\s*\n?\s*.*deprecated", re.I)


def excluded_reason(name):
    for pattern, reason in EXCLUDED_PATTERNS:
        if re.search(pattern, name):
            return reason
    return None


def is_candidate(prefix, attr, fn):
    if fn is None or not callable(fn) or inspect.isclass(fn) or inspect.ismodule(fn):
        return False
    if not (inspect.isbuiltin(fn) or inspect.isfunction(fn) or type(fn).__name__ == "builtin_function_or_method"):
        return False
    if excluded_reason(attr):
        return False
    doc = getattr(fn, "__doc__", None) or ""
    return not DEPRECATED_RE.search(doc[:2000])
