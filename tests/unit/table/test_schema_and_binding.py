"""The schema parser and overload binding, in-process (no daemon): what the table reads from
PyTorch's registry, and which overload a command line picks."""
import functools

import pytest
import torch

from torchsh.call import bind, misfit as call_misfit, parse, tokens
from torchsh.table import build_table, exclusions, from_torch
from torchsh.table.categories import alias_target
from torchsh.table.spec import MISSING, UnsupportedType, parse_schema


@functools.lru_cache(maxsize=None)
def table():
    return build_table()[0]


def choose(argv):
    op, fixed, words = table().resolve(argv)
    parsed = parse.split_argv(op, words, fixed)
    binding, _ = bind.choose(op, parsed.positionals, parsed.flags)
    return op, binding, parsed


# -- parse_schema --------------------------------------------------------------------------------
def test_schema_reads_types_defaults_and_keyword_only_arguments():
    name, overload, args, returns = parse_schema(
        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    assert (name, overload, returns) == ("add", "Tensor", "Tensor")
    assert [(a.name, a.kind, a.keyword_only) for a in args] == [
        ("input", "tensor", False), ("other", "tensor", False), ("alpha", "scalar", True)]
    assert args[0].default is MISSING and args[2].default == 1


def test_alias_annotation_arrow_is_not_the_return_arrow():
    _, _, args, returns = parse_schema("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]")
    assert [a.name for a in args] == ["input", "chunks", "dim"]
    assert returns == "Tensor(a)[]"


def test_optional_lists_and_list_defaults():
    _, _, args, _ = parse_schema("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
                                 "ScalarType? dtype=None) -> Tensor")
    dim, keepdim, dtype = args[1:]
    assert (dim.kind, dim.optional, dim.required) == ("int_list", True, False)
    assert keepdim.default is False and dtype.kind == "dtype" and dtype.default is None


def test_mutable_arguments_are_refused():
    with pytest.raises(ValueError):
        parse_schema("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")


def test_types_the_shell_cannot_express_are_refused():
    with pytest.raises(UnsupportedType):
        parse_schema("set.source_Storage(Tensor self, Storage source) -> Tensor")


# -- the rows ------------------------------------------------------------------------------------
def test_python_signature_types_int_or_list_and_tensor_or_number():
    split = table().ops["split"].overloads[0]
    assert [a.kind for a in split.args] == ["tensor", "int_list", "int"]
    var = {a.name: a for a in table().ops["nn.functional.gaussian_nll_loss"].overloads[0].args}["var"]
    assert var.kind == "tensor"


def test_deprecated_loss_arguments_are_not_flags():
    names = {a.name for ov in table().ops["nn.functional.mse_loss"].overloads for a in ov.args}
    assert "reduction" in names and not names & {"size_average", "reduce"}


def test_boolean_dispatch_wrappers_are_typed_by_their_real_signature():
    args = [a.name for a in table().ops["nn.functional.max_pool2d"].overloads[0].args]
    assert args[:2] == ["input", "kernel_size"] and "return_indices" in args


def test_exclusion_groups_each_have_a_reason_and_keep_useful_queries():
    groups = exclusions.excluded(from_torch.NAMESPACES)
    assert {"in-place", "private", "deprecated", "removed", "twin"} <= set(groups)
    assert all(reason for reason, _ in groups.values())
    assert "eig" in groups["removed"][1] and "qr" in groups["deprecated"][1]
    assert "kl_div" in groups["twin"][1]
    for useful in ("is_floating_point", "result_type", "chunk", "unbind", "tensor_split"):
        assert useful in table().ops, useful


def test_aliases_take_their_targets_category():
    assert alias_target("Alias for torch.acos.") == "acos"
    ops = table().ops
    assert ops["arccos"].category == ops["acos"].category == "pointwise"
    assert ops["multiply"].category == "pointwise" and ops["absolute"].category == "pointwise"


@pytest.mark.parametrize("name, category", [
    ("add", "pointwise"), ("sum", "reduction"), ("topk", "comparison"), ("cat", "shape"),
    ("linalg.qr", "linalg"), ("fft.rfft", "fft"), ("special.erfcx", "special"),
    ("nn.functional.gelu", "activation"), ("nn.functional.cross_entropy", "loss"), ("randn", "random"),
    ("zeros", "creation"), ("nn.functional.dropout", "random"), ("conv2d", "other")])
def test_categories(name, category):
    assert table().ops[name].category == category


def test_first_paragraph_skips_the_signature_line():
    assert from_torch.first_paragraph(torch.arctan2) == "Alias for torch.atan2."
    assert table().ops["add"].doc.startswith("Adds other, scaled by alpha, to input")


# -- overload choice -----------------------------------------------------------------------------
H = "tensor://abc00001"


@pytest.mark.parametrize("argv, overload", [
    (["add", H, H], "Tensor"), (["add", H, "2", "--alpha", "3"], "Scalar"),
    (["pow", "2", H], "Scalar"), (["pow", H, "2"], "Tensor_Scalar"), (["pow", H, H], "Tensor_Tensor"),
    (["max", H], ""), (["max", H, "--dim", "1"], "dim"), (["max", H, H], "other"),
    (["clamp", H, "--min", "0"], ""), (["sum", H, "--dim", "[0,1]", "--keepdim"], "dim_IntList"),
    (["where", H], ""), (["where", H, H, H], "self")])
def test_overloads_resolve_as_pytorch_does(argv, overload):
    op, binding, _ = choose(argv)
    assert binding is not None and binding.overload.name == overload


def test_names_resolve_dotted_split_bare_and_alias():
    assert table().resolve(["linalg", "qr", H])[0].name == "linalg.qr"
    assert table().resolve(["gelu", H])[0].name == "nn.functional.gelu"
    assert table().resolve(["mse_loss"])[0].name == "nn.functional.mse_loss"
    assert table().resolve(["svd"])[0].name == "linalg.svd"


def test_peer_flag_smallest_means_largest_false():
    _, binding, parsed = choose(["topk", H, "2", "--smallest"])
    assert parsed.flags["largest"].value is False and binding is not None


def test_stdin_is_needed_only_when_a_tensor_slot_is_missing():
    op, binding, parsed = choose(["sub", H])
    assert binding is None
    assert bind.stdin_choice(op, parsed.positionals, parsed.flags).need() == 1


def test_misfit_names_the_argument_and_what_it_got():
    op = table().ops["topk"]
    assert call_misfit.misfit(op, [tokens.from_word(H), tokens.from_word(H)], {}) == \
        "k wants int, got a handle %s" % H
    assert "too many" in call_misfit.misfit(table().ops["neg"], [tokens.from_word(H)] * 3, {})
