"""Category per op for discovery: namespace first (linalg., fft., special.), then name rules for
the groups PyTorch's docs draw by hand (comparison, creation, shape, linalg…), then ATen's tags
(pointwise, reduction, nondeterministic_seeded), then the category of the op a row is an alias of
(`torch.arccos` is "Alias for torch.acos"; see with_alias_categories)."""
import re

CATEGORIES = ("creation", "pointwise", "reduction", "comparison", "shape", "linalg", "fft", "special",
              "activation", "loss", "random", "other")

_ACTIVATION = re.compile(r"^(relu|gelu|silu|mish|elu|selu|celu|leaky_relu|prelu|rrelu|glu|hardtanh|hardswish|"
                         r"hardsigmoid|sigmoid|tanh|softplus|softshrink|hardshrink|tanhshrink|softsign|softmax|"
                         r"softmin|log_softmax|gumbel_softmax|logsigmoid|threshold|relu6)$")
_LOSS = re.compile(r"(_loss$|^(cross_entropy|nll_loss|binary_cross_entropy|binary_cross_entropy_with_logits|"
                   r"kl_div|linear_cross_entropy)$)")
_NAME_RULES = (
    # recurrent and attention kernels carry ATen's nondeterministic tag only for their dropout
    (r"^(gru|lstm|rnn_relu|rnn_tanh|\w+_cell|scaled_dot_product_attention|multi_head_attention_forward)$",
     "other"),
    (r"^\w*dropout", "random"),
    (r"^(floor_divide)$", "pointwise"),
    (r"^(eq|ne|lt|le|gt|ge|equal|allclose|isclose|greater|less|not_equal|greater_equal|less_equal|"
     r"isin|maximum|minimum|fmax|fmin|sort|argsort|msort|topk|kthvalue|isfinite|isinf|isnan|isneginf|"
     r"isposinf|isreal|searchsorted|bucketize)$", "comparison"),
    (r"^(zeros|ones|full|empty|eye|arange|linspace|logspace|tensor|scalar_tensor|complex|polar|"
     r"tril_indices|triu_indices|(zeros|ones|full|empty)_like|empty_strided|empty_permuted)$", "creation"),
    (r"^(rand|randn|randint|randperm|normal|bernoulli|multinomial|poisson|rand_like|randn_like|"
     r"randint_like|binomial)$", "random"),
    (r"^(reshape|view|permute|transpose|swapaxes|swapdims|cat|concat|concatenate|stack|hstack|vstack|dstack|"
     r"column_stack|row_stack|squeeze|unsqueeze|flatten|unflatten|chunk|unsafe_chunk|split|unsafe_split|"
     r"split_with_sizes|unsafe_split_with_sizes|tensor_split|hsplit|vsplit|dsplit|unbind|narrow|narrow_copy|"
     r"select|index_select|masked_select|gather|scatter|scatter_add|scatter_reduce|take|take_along_dim|flip|"
     r"fliplr|flipud|roll|rot90|movedim|moveaxis|t|adjoint|broadcast_to|broadcast_tensors|tile|repeat|"
     r"repeat_interleave|expand|expand_as|reshape_as|view_as|diag|diagonal|diag_embed|diagflat|tril|triu|"
     r"where|nonzero|nonzero_static|argwhere|index_add|index_copy|index_fill|index_put|index_reduce|"
     r"masked_fill|masked_scatter|atleast_\dd|block_diag|cartesian_prod|combinations|meshgrid|ravel|"
     r"\w+_copy|slice_scatter|select_scatter|diagonal_scatter|as_strided|as_strided_scatter|clone|detach|"
     r"resolve_conj|resolve_neg|conj|conj_physical|unravel_index|put|fill|slice_inverse|view_as_real|"
     r"view_as_complex|type_as|constant_pad_nd|pad|pixel_shuffle|pixel_unshuffle|channel_shuffle)$", "shape"),
    (r"^(mm|bmm|matmul|mv|dot|vdot|inner|outer|addmm|addbmm|baddbmm|addmv|addr|tensordot|einsum|kron|"
     r"cross|cholesky.*|qr|svd|svd_lowrank|pca_lowrank|lu.*|det|logdet|slogdet|inverse|pinverse|"
     r"matrix_power|matrix_exp|trace|triangular_solve|geqrf|orgqr|ormqr|chain_matmul|cdist|pdist|"
     r"frobenius_norm|nuclear_norm|lobpcg|linalg_.*|renorm|vander)$", "linalg"),
    (r"^(sum|mean|prod|std|var|max|min|amax|amin|argmax|argmin|all|any|norm|logsumexp|median|nanmedian|"
     r"mode|nansum|nanmean|count_nonzero|cumsum|cumprod|cummax|cummin|logcumsumexp|std_mean|var_mean|"
     r"aminmax|quantile|nanquantile|unique|unique_consecutive|histc|histogram|histogramdd|bincount|dist|"
     r"diff|trapezoid|trapz|cumulative_trapezoid|cov|corrcoef)$", "reduction"),
)


def category_of(full_name, attr, schemas, doc=""):
    if full_name.startswith("linalg."):
        return "linalg"
    if full_name.startswith("fft.") or attr in ("stft", "istft") or attr.endswith("_window"):
        return "fft"
    if full_name.startswith("special."):
        return "special"
    if _LOSS.search(attr):
        return "loss"
    if full_name.startswith("nn.functional.") and _ACTIVATION.match(attr):
        return "activation"
    for pattern, category in _NAME_RULES:
        if re.match(pattern, attr):
            return category
    tags = {str(t) for s in schemas for t in _tags(s)}
    if "Tag.nondeterministic_seeded" in tags:
        return "random"
    if "Tag.reduction" in tags:
        return "reduction"
    if "Tag.pointwise" in tags:
        return "pointwise"
    if _ACTIVATION.match(attr):
        return "activation"  # torch.prelu, torch.softmax: documented, untagged
    return "other"


_ALIAS_RE = re.compile(r"^(?:Alias|An alias) (?:for|of) (?:torch\.)?([\w.]+?)\.?(?:\(\))?(?:[ .,]|$)")


def alias_target(doc):
    """`Alias for torch.acos().` -> "acos"; None when the docstring does not start that way."""
    m = _ALIAS_RE.match(doc or "")
    return m.group(1).rstrip(".") if m else None


def with_alias_categories(rows):
    """Rows left in "other" that are documented aliases take their target's category."""
    by_name = {row.name: row for row in rows}
    for row in rows:
        target = by_name.get(alias_target(row.doc))
        if row.category == "other" and target is not None and target is not row:
            row.category = target.category
    return rows


def _tags(schema):
    import torch
    name = schema.name[6:]
    overload = schema.overload_name or "default"
    try:
        return getattr(getattr(torch.ops.aten, name), overload).tags
    except (AttributeError, RuntimeError):
        return ()
