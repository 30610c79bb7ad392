"""Optimizers from bash: the documented options and defaults, errors before anything is built,
parameter groups, optim lr / info / list, step, gradient clipping."""
import json

import pytest
import torch

nn = torch.nn

DOCUMENTED = {
    "sgd": {"lr": 0.01, "momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False},
    "adam": {"lr": 0.001, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0, "amsgrad": False},
    "adamw": {"lr": 0.001, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01, "amsgrad": False},
    "rmsprop": {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0, "momentum": 0, "centered": False},
    "adagrad": {"lr": 0.01, "lr_decay": 0, "weight_decay": 0, "initial_accumulator_value": 0, "eps": 1e-10},
}


@pytest.fixture(scope="module")
def model(sh):
    return sh("torch nn linear 3 2")


@pytest.mark.parametrize("kind", sorted(DOCUMENTED))
def test_documented_optimizers_take_exactly_their_options_and_defaults(sh, model, kind):
    info = json.loads(sh("torch optim %s %s | torch optim info --json" % (kind, model)))
    options = info["groups"][0]["options"]
    for name, value in DOCUMENTED[kind].items():
        assert options[name] == value, name
    row = next(r for r in json.loads(sh("torch ops optim --json")) if r["name"] == "optim." + kind)
    assert {a["name"] for a in row["overloads"][0]["args"]} - {"params"} == set(DOCUMENTED[kind])


def test_betas_read_as_json_or_comma_list(sh, model):
    for text in ("'[0.8,0.95]'", "0.8,0.95"):
        info = json.loads(sh("torch optim adam %s --betas %s | torch optim info --json" % (model, text)))
        assert info["groups"][0]["options"]["betas"] == [0.8, 0.95]


@pytest.mark.parametrize("flags,word", [
    ("sgd --lr -0.1", "Invalid learning rate"),
    ("sgd --nesterov", "Nesterov momentum requires a momentum"),
    ("adam --betas 1.5,0.9", "beta parameter at index 0"),
    ("rmsprop --eps -1", "epsilon"),
])
def test_bad_values_are_errors_before_anything_is_built(sh, model, flags, word):
    kind, rest = flags.split(" ", 1)
    before = sh("torch tensors --kind optim | wc -l")
    r = sh.run("torch optim %s %s %s" % (kind, model, rest))
    assert r.code == 2 and word in r.err and r.out == ""
    assert sh("torch tensors --kind optim | wc -l") == before


def test_misspelled_flags_are_errors_listing_the_valid_ones(sh, model):
    r = sh.run("torch optim sgd %s --lr 0.1 --momentun 0.9" % model)
    assert r.code == 2 and "unknown flag --momentun" in r.err and "--momentum" in r.err
    r = sh.run("torch optim adam %s --momentum 0.9" % model)  # a real option of another optimizer
    assert r.code == 2 and "unknown flag --momentum" in r.err


def test_every_torch_optim_optimizer_has_a_kind(sh, model):
    kinds = {r["class"] for r in json.loads(sh("torch optim list --json"))}
    expected = {n for n in dir(torch.optim) if isinstance(getattr(torch.optim, n), type)
                and issubclass(getattr(torch.optim, n), torch.optim.Optimizer) and n != "Optimizer"}
    assert kinds == expected
    for kind in ("adadelta", "adamax", "asgd", "nadam", "radam", "rprop", "lbfgs", "SGD", "AdamW"):
        assert sh("torch optim %s %s" % (kind, model)).startswith("optim://")


def test_parameter_groups_get_their_own_options(sh):
    body, head = sh("torch nn linear 3 4"), sh("torch nn linear 4 1")
    opt = sh("torch optim sgd %s '%s lr=0.5 momentum=0.9' --lr 0.05" % (body, head))
    info = json.loads(sh("torch optim info %s --json" % opt))
    assert [(g["params"], g["options"]["lr"], g["options"]["momentum"]) for g in info["groups"]] == [
        (2, 0.05, 0), (2, 0.5, 0.9)]
    assert sh("torch optim lr %s" % opt) == "[0.05,0.5]"


def test_parameter_groups_match_python_param_groups_bit_for_bit(sh):
    x, y = sh.put(torch.randn(8, 3)), sh.put(torch.randn(8, 1))
    body, head = sh("torch nn linear 3 4"), sh("torch nn linear 4 1")
    seq = sh("torch nn sequential %s %s" % (body, head))
    state = _state(sh, seq)
    opt = sh("torch optim adam %s '%s lr=0.1 betas=0.5,0.9' --lr 0.01" % (body, head))
    sh("for i in 1 2 3; do torch train_step %s %s %s %s >/dev/null; done" % (seq, opt, x, y))
    ref = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    ref.load_state_dict(state)
    ropt = torch.optim.Adam([{"params": ref[0].parameters()},
                             {"params": ref[1].parameters(), "lr": 0.1, "betas": (0.5, 0.9)}], lr=0.01)
    for _ in range(3):
        ropt.zero_grad()
        nn.functional.mse_loss(ref(sh.fetch(x)), sh.fetch(y)).backward()
        ropt.step()
    got = _state(sh, seq)
    assert all(torch.equal(got[k], v) for k, v in ref.state_dict().items())


def _state(sh, m):
    from safetensors.torch import load_file
    path = sh.tmp("s.safetensors")
    sh("torch nn save %s %s" % (m, path))
    return load_file(path)


def test_a_group_option_must_be_an_option_of_the_optimizer(sh, model):
    r = sh.run("torch optim sgd '%s lr=0.1 betas=0.9,0.99'" % model)
    assert r.code == 2 and "betas" in r.err and "momentum" in r.err


def test_the_same_parameters_in_two_groups_is_an_error(sh, model):
    r = sh.run("torch optim sgd %s '%s lr=0.1'" % (model, model))
    assert r.code == 2 and "more than one parameter group" in r.err


def test_optimizer_of_plain_tensors(sh):
    w = sh("torch tensor '[1.0,-2.0]' --requires_grad")
    sh("o=$(torch optim sgd %s --lr 0.5); torch mul %s %s | torch sum | torch backward; torch step $o" % (w, w, w))
    assert sh("torch value %s" % w) == "[0.0,0.0]"


def test_optim_lr_reads_and_sets_every_group(sh, model):
    opt = sh("torch optim sgd %s --lr 0.1" % model)
    assert sh("torch optim lr %s" % opt) == "0.1"
    sh("torch optim lr %s 0.025" % opt)
    assert sh("torch optim lr %s" % opt) == "0.025"
    assert sh.run("torch optim lr %s -1" % opt).code == 2


def test_optim_info_counts_state_after_a_step(sh):
    m = sh("torch nn linear 3 2")
    opt = sh("torch optim adam %s" % m)
    x = sh.put(torch.randn(4, 3))
    sh("torch forward %s %s | torch sum | torch backward; torch step %s" % (m, x, opt))
    info = json.loads(sh("torch optim info %s --json" % opt))
    assert info["kind"] == "Adam" and info["state_tensors"] == 6  # step, exp_avg, exp_avg_sq per parameter
    assert "Adam" in sh("torch optim info %s" % opt)


def test_step_of_lbfgs_points_to_train_step(sh, model):
    r = sh.run("o=$(torch optim lbfgs %s); torch step $o" % model)
    assert r.code == 2 and "train_step" in r.err


def test_lbfgs_trains_through_train_step(sh):
    x = sh.put(torch.tensor([[0.0], [1.0], [2.0]]))
    y = sh.put(torch.tensor([[1.0], [3.0], [5.0]]))
    m = sh("torch nn linear 1 1")
    out = sh("o=$(torch optim lbfgs %s --lr 1); for i in 1 2 3; do torch train_step %s $o %s %s; done"
             % (m, m, x, y)).split()
    assert float(out[-1]) < 1e-6 < float(out[0])


def test_clip_grad_norm_prints_the_total_norm_and_clips_like_pytorch(sh):
    g = torch.tensor([3.0, 4.0, 12.0])
    w = sh("torch zeros '[3]' --requires_grad")
    sh("torch mul %s %s | torch sum | torch backward" % (w, sh.put(g)))
    assert sh("torch clip_grad_norm %s --max_norm 1" % w) == "13.0"
    ref = torch.zeros(3, requires_grad=True)
    (ref * g).sum().backward()
    nn.utils.clip_grad_norm_([ref], 1.0)
    assert torch.equal(sh.fetch(sh("torch grad %s" % w)), ref.grad)


def test_clip_grad_norm_takes_a_model_or_an_optimizer(sh):
    m = sh("torch nn linear 3 2")
    x = sh.put(torch.randn(4, 3))
    sh("torch forward %s %s | torch sum | torch backward" % (m, x))
    by_model = sh("torch clip_grad_norm %s --max_norm 100" % m)
    by_opt = sh("o=$(torch optim sgd %s); torch clip_grad_norm $o --max_norm 100" % m)
    assert by_model == by_opt and float(by_model) > 0


def test_clip_grad_value_clamps_every_element(sh):
    w = sh("torch zeros '[3]' --requires_grad")
    sh("torch mul %s %s | torch sum | torch backward" % (w, sh.put(torch.tensor([-3.0, 0.5, 2.0]))))
    sh("torch clip_grad_value %s --clip_value 1" % w)
    assert sh("torch grad %s | torch value" % w) == "[-1.0,0.5,1.0]"
