"""Category per op for discovery: ATen's tags (pointwise, reduction, nondeterministic_seeded) first,
then namespace and name rules."""
import re

CATEGORIES = ("creation", "pointwise", "reduction", "comparison", "shape", "linalg", "fft", "special",
              "activation", "loss", "random", "other")

_NAME_RULES = (
    (r"^(eq|ne|lt|le|gt|ge|equal|allclose|isclose|greater|less|not_equal|greater_equal|less_equal|"
     r"isin|maximum|minimum|fmax|fmin|sort|argsort|msort|topk|kthvalue|eq|isfinite|isinf|isnan|isneginf|isposinf|isreal)$", "comparison"),
    (r"^(zeros|ones|full|empty|eye|arange|linspace|logspace|tensor|scalar_tensor|complex|polar|"
     r"tril_indices|triu_indices|(zeros|ones|full|empty|rand|randn|randint)_like|heaviside)$", "creation"),
    (r"^(rand|randn|randint|randperm|normal|bernoulli|multinomial|poisson|rand_like|randn_like|randint_like)$", "random"),
    (r"^(reshape|view|permute|transpose|swapaxes|swapdims|cat|concat|concatenate|stack|hstack|vstack|dstack|"
     r"column_stack|row_stack|squeeze|unsqueeze|flatten|unflatten|chunk|split|tensor_split|hsplit|vsplit|"
     r"dsplit|unbind|narrow|narrow_copy|select|index_select|masked_select|gather|scatter|scatter_add|"
     r"scatter_reduce|take|take_along_dim|flip|fliplr|flipud|roll|rot90|movedim|moveaxis|t|adjoint|"
     r"expand_copy|broadcast_to|broadcast_tensors|tile|repeat_interleave|diag|diagonal|diag_embed|diagflat|"
     r"tril|triu|where|nonzero|argwhere|index_add|index_copy|index_fill|index_put|index_reduce|masked_fill|"
     r"masked_scatter|atleast_\dd|block_diag|cartesian_prod|combinations|meshgrid|ravel|squeeze_copy|"
     r"unsqueeze_copy|view_copy|permute_copy|transpose_copy|t_copy|slice_scatter|select_scatter|"
     r"diagonal_scatter|as_strided|as_strided_copy|as_strided_scatter|clone|detach|detach_copy|"
     r"unfold_copy|alias_copy|flatten|resolve_conj|resolve_neg|conj|conj_physical|nested_to_padded_tensor)$", "shape"),
    (r"^(mm|bmm|matmul|mv|dot|vdot|inner|outer|ger|addmm|addbmm|baddbmm|addmv|addr|tensordot|einsum|kron|"
     r"cross|cholesky.*|qr|svd|svd_lowrank|pca_lowrank|lu.*|det|logdet|slogdet|inverse|pinverse|"
     r"matrix_power|matrix_exp|trace|triangular_solve|geqrf|orgqr|ormqr|chain_matmul|cdist|pdist|"
     r"frobenius_norm|nuclear_norm|lobpcg|linalg_.*)$", "linalg"),
)


def category_of(full_name, attr, schemas, doc):
    if full_name.startswith("linalg."):
        return "linalg"
    if full_name.startswith("fft.") or attr in ("stft", "istft") or attr.endswith("_window"):
        return "fft"
    if full_name.startswith("special."):
        return "special"
    if full_name.startswith("nn.functional."):
        if attr.endswith("_loss") or attr in ("cross_entropy", "nll_loss", "binary_cross_entropy",
                                              "binary_cross_entropy_with_logits", "kl_div", "ctc_loss"):
            return "loss"
        if re.match(r"^(relu|gelu|silu|mish|elu|selu|celu|leaky_relu|prelu|rrelu|glu|hardtanh|hardswish|"
                    r"hardsigmoid|sigmoid|tanh|softplus|softshrink|hardshrink|tanhshrink|softsign|softmax|"
                    r"softmin|log_softmax|gumbel_softmax|logsigmoid|threshold|relu6)", attr):
            return "activation"
    for pattern, category in _NAME_RULES:
        if re.match(pattern, attr):
            return category
    tags = {str(t) for s in schemas for t in _tags(s)}
    if "Tag.nondeterministic_seeded" in tags:
        return "random"
    if "Tag.reduction" in tags or re.match(r"^(sum|mean|prod|std|var|max|min|amax|amin|argmax|argmin|"
                                           r"all|any|norm|logsumexp|median|nanmedian|mode|nansum|nanmean|"
                                           r"count_nonzero|cumsum|cumprod|cummax|cummin|logcumsumexp|"
                                           r"std_mean|var_mean|aminmax|quantile|nanquantile|unique.*|histc|bincount)$", attr):
        return "reduction"
    if "Tag.pointwise" in tags:
        return "pointwise"
    if full_name.startswith("nn.functional."):
        return "other"
    return "other"


def _tags(schema):
    import torch
    name = schema.name[6:]
    overload = schema.overload_name or "default"
    try:
        return getattr(getattr(torch.ops.aten, name), overload).tags
    except (AttributeError, RuntimeError):
        return ()
