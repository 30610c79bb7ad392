"""`torch dist KIND …` -> dist://, and sample/rsample/log_prob/cdf/icdf/entropy/mean/variance/kl, against
in-process torch.distributions: the same seed gives the same draws, bit for bit."""
import json

import pytest
import torch
import torch.distributions as D

# (shell words, the same distribution in Python)
KINDS = [
    ("normal 0 1", lambda: D.Normal(0, 1)),
    ("normal --loc '[0.0,1.0,-2.0]' --scale 0.5", lambda: D.Normal(torch.tensor([0.0, 1.0, -2.0]), 0.5)),
    ("bernoulli --probs 0.3", lambda: D.Bernoulli(probs=0.3)),
    ("categorical --probs '[0.1,0.2,0.7]'", lambda: D.Categorical(probs=torch.tensor([0.1, 0.2, 0.7]))),
    ("gamma 2 0.5", lambda: D.Gamma(2, 0.5)),
    ("dirichlet '[1.0,2.0,3.0]'", lambda: D.Dirichlet(torch.tensor([1.0, 2.0, 3.0]))),
    ("multivariate_normal '[0.0,0.0]' --covariance_matrix '[[1.0,0.5],[0.5,2.0]]'",
     lambda: D.MultivariateNormal(torch.zeros(2), covariance_matrix=torch.tensor([[1.0, 0.5], [0.5, 2.0]]))),
    ("uniform -1 3", lambda: D.Uniform(-1, 3)),
    ("binomial 10 --probs 0.25", lambda: D.Binomial(10, probs=0.25)),
    ("mixture_same_family $(torch dist categorical --probs '[0.3,0.7]') $(torch dist normal '[0.0,5.0]' 1)",
     lambda: D.MixtureSameFamily(D.Categorical(probs=torch.tensor([0.3, 0.7])), D.Normal(torch.tensor([0.0, 5.0]), 1))),
    ("independent $(torch dist normal '[[0.0,1.0]]' 2) 1", lambda: D.Independent(D.Normal(torch.tensor([[0.0, 1.0]]), 2), 1)),
]


@pytest.mark.parametrize("words,python", KINDS, ids=[w.split()[0] + str(i) for i, (w, _) in enumerate(KINDS)])
def test_samples_after_manual_seed_equal_pytorchs(sh, words, python):
    got = sh.fetch(sh("torch manual_seed 7 && torch dist sample $(torch dist %s) --shape 4,2" % words))
    torch.manual_seed(7)
    want = python().sample((4, 2))
    assert got.dtype == want.dtype and torch.equal(got, want)


@pytest.mark.parametrize("verb", ["sample", "rsample"])
def test_sample_shape_is_pytorchs_name_and_shape_still_works(sh, verb):
    draws = [sh.fetch(sh("torch manual_seed 3 && torch dist %s $(torch dist normal 0 1) --%s 2,3" % (verb, flag)))
             for flag in ("sample_shape", "shape")]
    torch.manual_seed(3)
    want = getattr(D.Normal(0.0, 1.0), verb)(sample_shape=(2, 3))
    assert all(torch.equal(got, want) for got in draws)
    assert "--sample_shape" in sh("torch dist %s --help" % verb)


def test_validate_args_false_turns_pytorchs_checks_off(sh):
    r = sh.run("torch dist log_prob $(torch dist uniform 0 1) 2")
    assert r.code == 4 and "support" in r.err  # PyTorch's own check of the value
    assert sh("torch value $(torch dist log_prob $(torch dist uniform 0 1 --validate_args false) 2)") == '"-Infinity"'


def test_a_number_for_shape_is_that_many_draws(sh):
    got = sh.fetch(sh("torch manual_seed 1 && torch dist sample $(torch dist normal 0 1) 5"))
    torch.manual_seed(1)
    assert torch.equal(got, D.Normal(0, 1).sample((5,)))


@pytest.mark.parametrize("method", ["log_prob", "cdf", "icdf"])
def test_functions_of_a_value_equal_pytorchs(sh, method):
    value = torch.tensor([0.1, 0.5, 0.9])
    d = sh("torch dist normal --loc '[0.0,1.0,-2.0]' --scale 0.5")
    got = sh.fetch(sh("torch dist %s %s %s" % (method, d, sh.put(value))))
    assert torch.equal(got, getattr(D.Normal(torch.tensor([0.0, 1.0, -2.0]), 0.5), method)(value))


@pytest.mark.parametrize("method", ["entropy", "mean", "variance"])
def test_properties_equal_pytorchs(sh, method):
    got = sh.fetch(sh("torch dist %s $(torch dist gamma '[2.0,3.0]' 0.5)" % method))
    d = D.Gamma(torch.tensor([2.0, 3.0]), 0.5)
    want = d.entropy() if method == "entropy" else getattr(d, method)
    assert torch.equal(got, want)


def test_kl_equals_kl_divergence(sh):
    got = sh.fetch(sh("torch dist kl $(torch dist normal 0 1) $(torch dist normal '[1.0,2.0]' 2)"))
    assert torch.equal(got, D.kl_divergence(D.Normal(0, 1), D.Normal(torch.tensor([1.0, 2.0]), 2)))


def test_rsample_is_differentiable_in_a_parameter_handle(sh):
    loc = sh.put(torch.tensor([0.5, -1.0]), requires_grad=True)
    sh("torch manual_seed 3 && torch backward $(torch sum $(torch dist rsample $(torch dist normal %s 2) 3))" % loc)
    got = sh.fetch(sh("torch grad %s" % loc))
    assert torch.equal(got, torch.full((2,), 3.0))  # d/dloc of sum over 3 draws of loc + 2·eps


def test_parameters_can_be_tensor_handles(sh):
    probs = torch.tensor([[0.2, 0.8], [0.6, 0.4]])
    got = sh.fetch(sh("torch manual_seed 0 && torch dist sample $(torch dist categorical --probs %s) 3"
                      % sh.put(probs)))
    torch.manual_seed(0)
    assert torch.equal(got, D.Categorical(probs=probs).sample((3,)))


def test_a_method_pytorch_lacks_is_a_one_line_torch_error(sh):
    r = sh.run("torch dist cdf $(torch dist categorical --probs '[0.5,0.5]') 1")
    assert r.code == 4 and r.err.count("\n") == 1 and "Categorical has no cdf" in r.err and "[torch_error]" in r.err
    r = sh.run("torch dist kl $(torch dist gamma 2 1) $(torch dist categorical --probs '[0.5,0.5]')")
    assert r.code == 4 and "no KL divergence from Gamma to Categorical" in r.err


@pytest.mark.parametrize("words,text", [
    ("normal 0 -1", "constraint GreaterThan"),         # PyTorch's validate_args
    ("normal abc 1", "'abc' is not a number"),
    ("bernoulli --probs 0.5 --logits 0", "Either `probs` or `logits`"),
])
def test_bad_parameters_are_bad_argument(sh, words, text):
    r = sh.run("torch dist %s" % words)
    assert r.code == 2 and "[bad_argument]" in r.err and text in r.err and r.err.count("\n") == 1, r.err


def test_dist_handles_are_their_own_kind_in_the_census_and_checked(sh):
    d = sh("torch dist normal '[0.0,1.0]' 1")
    assert d.startswith("dist://")
    row = next(r for r in json.loads(sh("torch tensors --json")) if r["handle"] == d)
    assert row["kind"] == "dist" and row["type"] == "Normal" and row["batch_shape"] == [2] and row["bytes"] == 16
    r = sh.run("torch dist sample $(torch zeros 2)")
    assert r.code == 3 and "[wrong_kind]" in r.err
    assert sh("torch print %s" % d).startswith("Normal(loc: torch.Size([2])")


def test_torch_dist_of_two_tensors_is_still_torch_dist(sh):
    got = sh.fetch(sh("torch dist $(torch ones 2) $(torch zeros 2)"))
    assert torch.equal(got, torch.dist(torch.ones(2), torch.zeros(2)))


def test_every_distribution_class_has_a_kind(sh):
    rows = json.loads(sh("torch dist list --json"))
    classes = {r["class"] for r in rows}
    public = {n for n in dir(D) if isinstance(getattr(D, n), type) and issubclass(getattr(D, n), D.Distribution)}
    assert classes == public - {"Distribution", "ExponentialFamily", "TransformedDistribution"}
    assert "normal" in {r["kind"] for r in rows}


def test_the_json_api_builds_and_samples_like_the_cli(sh):
    from support.apicall import post
    status, made = post(sh, "dist.normal", {"args": [0, 1], "kwargs": {}})
    assert status == 200 and made["result"].startswith("dist://")
    post(sh, "manual_seed", {"args": [11]})
    status, drawn = post(sh, "dist.sample", {"args": [made["result"]], "kwargs": {"sample_shape": [3]}})
    torch.manual_seed(11)
    assert status == 200 and torch.equal(sh.fetch(drawn["result"]), D.Normal(0, 1).sample((3,)))
    status, err = post(sh, "dist.normal", {"args": [0, -1]})
    assert status == 400 and err["error"]["code"] == "bad_argument"


@pytest.mark.parametrize("name", ["sample_shape", "shape"])
def test_the_json_api_takes_sample_shape_and_the_older_shape(sh, name):
    from support.apicall import post
    status, made = post(sh, "dist.normal", {"args": [0, 1]})
    for _ in range(2):  # the second call of a shape takes the remembered plan (api/calls.py)
        post(sh, "manual_seed", {"args": [13]})
        status, drawn = post(sh, "dist.sample", {"args": [made["result"]], "kwargs": {name: [2]}})
        torch.manual_seed(13)
        assert status == 200 and torch.equal(sh.fetch(drawn["result"]), D.Normal(0, 1).sample((2,)))


def test_a_number_where_the_class_needs_a_tensor_is_a_bad_argument_not_an_internal_error(sh):
    r = sh.run("torch dist categorical --logits 5")
    assert r.code == 2 and r.err.strip().endswith("[bad_argument]")
    assert "Categorical takes a tensor for logits" in r.err and r.err.count("\n") == 1
