"""`torch ops`, `torch ops --search`, `torch OP --help`, named-tuple --json, and the peer's op names,
through real bash against the session daemon."""
import json

import pytest
import torch

# every op name of NuTorch's table (github.com/nutorch/nutorch ops/src/lib.rs) that is a tensor op;
# its autograd words (backward, grad, zero_grad) and manual_seed are verbs of their own issues
PEER_OPS = """add sub sin pow clamp sum mean eq allclose sort mm cat full randn abs acos acosh asin asinh atan
atanh ceil cos cosh deg2rad digamma erf erfc exp exp2 expm1 floor frac i0 lgamma log log10 log1p log2 logit neg
rad2deg reciprocal relu round rsqrt sgn sigmoid sign sinc sinh sqrt square tan tanh trunc softmax log_softmax
nan_to_num mul div maximum minimum atan2 fmod remainder floor_divide hypot copysign xlogy logaddexp prod amax
amin max min median argmax argmin all any std var nansum logsumexp count_nonzero cumsum cumprod norm gt lt ge le
ne logical_and logical_or logical_xor isclose isnan isinf isfinite isposinf isneginf logical_not equal topk
argsort matmul bmm dot outer einsum tril triu diag trace det inverse svd solve reshape permute transpose t
squeeze unsqueeze flatten stack split chunk gather index_select masked_select where narrow flip roll repeat
repeat_interleave movedim zeros ones eye arange linspace rand randint zeros_like ones_like full_like rand_like
randn_like lerp addcmul addcdiv cross kron tensordot take_along_dim searchsorted bucketize msort diff scatter
bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift unique detach mse_loss
l1_loss smooth_l1_loss huber_loss cross_entropy nll_loss binary_cross_entropy binary_cross_entropy_with_logits
kl_div""".split()


def test_every_peer_op_name_is_accepted(sh):
    script = "; ".join("torch %s --help >/dev/null || echo MISSING %s" % (n, n) for n in PEER_OPS)
    assert sh(script) == ""


def test_ops_lists_a_category_with_summaries(sh):
    rows = sh("torch ops linalg").splitlines()
    names = [r.split()[0] for r in rows]
    assert "linalg.qr" in names and "matmul" in names and "add" not in names
    assert all(r.split()[1] == "linalg" for r in rows)


def test_ops_json_has_typed_signatures(sh):
    rows = {r["name"]: r for r in json.loads(sh("torch ops pointwise --json"))}
    add = rows["add"]
    assert add["category"] == "pointwise" and add["summary"]
    args = {a["name"]: a for ov in add["overloads"] for a in ov["args"]}
    assert args["alpha"]["keyword_only"] or args["alpha"]["default"] == 1
    assert any(s.startswith("add(Tensor input, Tensor other") for s in add["signatures"])


def test_ops_search_finds_by_name_and_summary(sh):
    names = [r.split()[0] for r in sh("torch ops --search erfc").splitlines()]
    assert {"special.erfc", "special.erfcx"} <= set(names)
    by_summary = [r.split()[0] for r in sh("torch ops --search 'QR decomposition'").splitlines()]
    assert "linalg.qr" in by_summary


def test_unknown_category_is_a_usage_error_listing_categories(sh):
    r = sh.run("torch ops nosuch")
    assert r.code == 2 and "categories: creation, pointwise" in r.err


def test_help_shows_signatures_argument_types_defaults_and_docs(sh):
    out = sh("torch max --help")
    assert out.startswith("usage: torch max TENSOR")
    assert "torch max TENSOR DIM [--keepdim]" in out
    assert "Returns the maximum value of all elements in the input tensor." in out
    signature = "torch.max(Tensor input, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
    assert signature in " ".join(out.split())  # wrapped to 80 columns (stdout is no terminal here)
    assert "--keepdim" in out and "(default: false)" in out


def test_help_lists_peer_flags_and_aliases(sh):
    assert "--smallest" in sh("torch topk --help")
    assert "aliases: svd" in sh("torch linalg.svd --help")


def test_named_tuples_keep_field_names_in_json(sh):
    a = sh.put(torch.tensor([[1.0, 5.0], [7.0, 2.0]]))
    fields = json.loads(sh("torch max %s --dim 1 --json" % a))
    assert set(fields) == {"values", "indices"}
    assert torch.equal(sh.fetch(fields["indices"]), torch.tensor([1, 0]))
    qr = json.loads(sh("torch linalg qr %s --json" % a))
    assert set(qr) == {"Q", "R"}


def test_multi_output_ops_print_one_handle_per_line(sh):
    a = sh.put(torch.arange(6.0).reshape(2, 3))
    assert len(sh("torch max %s --dim 1" % a).splitlines()) == 2
    assert len(sh("torch chunk %s 3 --dim 1" % a).splitlines()) == 3
    assert len(sh("torch split %s '[1,2]' --dim 1" % a).splitlines()) == 2


@pytest.mark.parametrize("script, expected", [
    ("torch add $a $b", lambda a, b: torch.add(a, b)),
    ("torch add $a 2 --alpha 3", lambda a, b: torch.add(a, 2, alpha=3)),
    ("torch pow 2 $a", lambda a, b: torch.pow(2, a)),
    ("torch clamp $a --min 0", lambda a, b: torch.clamp(a, min=0)),
    ("torch max $a", lambda a, b: torch.max(a)),
    ("torch sum $a --dim '[0,1]' --keepdim", lambda a, b: torch.sum(a, dim=[0, 1], keepdim=True)),
    ("torch topk $a 2 --smallest | head -1", lambda a, b: torch.topk(a, 2, largest=False).values),
    ("torch sort $a --descending | head -1", lambda a, b: torch.sort(a, descending=True).values),
    ("torch where $(torch gt $a 0) $a $b", lambda a, b: torch.where(a > 0, a, b)),
    ("torch einsum 'ij,kj->ik' $a $b", lambda a, b: torch.einsum("ij,kj->ik", a, b)),
    ("torch einsum $a $b --equation 'ij,kj->ik'", lambda a, b: torch.einsum("ij,kj->ik", a, b)),
    ("torch cat $a $b --dim 1", lambda a, b: torch.cat([a, b], 1)),
    ("printf '%s\\n' $a $b | torch stack", lambda a, b: torch.stack([a, b])),
    ("torch fft.rfft $a", lambda a, b: torch.fft.rfft(a)),
    ("torch special erfcx $a", lambda a, b: torch.special.erfcx(a)),
    ("torch gelu $a --approximate tanh", lambda a, b: torch.nn.functional.gelu(a, approximate="tanh")),
    ("torch to $a --dtype float64", lambda a, b: a.to(torch.float64)),
    ("torch norm $a --p 1", lambda a, b: torch.linalg.vector_norm(a, 1)),
    ("torch repeat $a '[2,1]'", lambda a, b: a.repeat(2, 1)),
    ("torch tensordot $a $b --dims '[[1],[1]]'", lambda a, b: torch.tensordot(a, b, dims=[[1], [1]])),
])
def test_overloads_and_peer_grammar_match_pytorch(sh, script, expected):
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    got = sh.fetch(sh("a=%s; b=%s; %s" % (sh.put(a), sh.put(b), script)))
    want = expected(a, b)
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_creation_grammar_of_the_peer(sh):
    assert torch.equal(sh.fetch(sh("torch arange 7 --start 1 --step 2")), torch.arange(1, 7, 2))
    assert torch.equal(sh.fetch(sh("torch eye 2 --m 3")), torch.eye(2, 3))
    assert torch.equal(sh.fetch(sh("torch full '[2,3]' 0.5")), torch.full([2, 3], 0.5))
    got = sh.fetch(sh("torch manual_seed 3 >/dev/null; torch randint 10 '[2,3]' --low 5"))
    torch.manual_seed(3)
    assert torch.equal(got, torch.randint(5, 10, (2, 3)))


def test_cross_entropy_and_cast_from_the_bare_names(sh):
    logits, target = torch.randn(4, 5), torch.tensor([1, 0, 4, 2])
    got = sh.fetch(sh("torch cross_entropy %s %s" % (sh.put(logits), sh.put(target))))
    assert torch.equal(got, torch.nn.functional.cross_entropy(logits, target))
