"""--space read into Optuna's own distributions, placeholders checked both ways, values written in full."""
import optuna.distributions as d
import pytest

from torchsh.errors import TorchshError
from torchsh.sweep import space


def test_each_spec_is_the_optuna_distribution_of_the_same_name():
    parsed = space.parse("width: [64, 128]; lr: loguniform(1e-4, 1e-1)\n drop: uniform(0, 0.5); "
                         "q: quniform(0, 1, 0.25); depth: int(1, 3); h: int(8, 64, 8); n: logint(1, 1024); "
                         "act: [relu, 'gelu', true]")
    assert parsed == {"width": d.CategoricalDistribution((64, 128)), "lr": d.FloatDistribution(1e-4, 1e-1, log=True),
                      "drop": d.FloatDistribution(0.0, 0.5), "q": d.FloatDistribution(0.0, 1.0, step=0.25),
                      "depth": d.IntDistribution(1, 3), "h": d.IntDistribution(8, 64, step=8),
                      "n": d.IntDistribution(1, 1024, log=True), "act": d.CategoricalDistribution(("relu", "gelu", True))}


@pytest.mark.parametrize("text,says", [
    ("lr loguniform(1e-4,1)", "cannot read 'lr loguniform(1e-4,1)' as NAME: SPEC"),
    ("lr: loguniform(0, 1)", "--space lr:"),                  # Optuna's own check: log needs low > 0
    ("lr: normal(0, 1)", "--space lr: cannot read 'normal(0, 1)'"),
    ("n: int(1.5, 3)", "int takes 2 or 3 integers"),
    ("a: [1]; a: [2]", "--space names a twice"),
    ("a: [1, 1]", "a choice needs distinct values"),
    ("", "--space is empty"),
])
def test_what_cannot_be_read_is_refused_with_the_entry_named(text, says):
    with pytest.raises(TorchshError) as e:
        space.parse(text)
    assert e.value.code == "bad_argument" and says in e.value.message


def test_placeholders_and_space_names_must_match_both_ways():
    parsed = space.parse("w: [8]; lr: [0.1]")
    space.check_placeholders(parsed, {"model": "linear 4 {w}", "opt": "sgd --lr {lr}"})
    with pytest.raises(TorchshError, match="--opt uses {rate}"):
        space.check_placeholders(parsed, {"model": "linear 4 {w}", "opt": "sgd --lr {rate} {lr}"})
    with pytest.raises(TorchshError, match="--space defines lr, which neither"):
        space.check_placeholders(parsed, {"model": "linear 4 {w}", "opt": "sgd --lr 0.1"})


def test_a_filled_template_writes_floats_in_full_so_the_command_repeats_the_trial():
    lr = 0.1 + 0.2  # 0.30000000000000004
    assert space.fill("adam --lr {lr} --amsgrad {a} # {w}", {"lr": lr, "a": False, "w": 8}) == \
        "adam --lr 0.30000000000000004 --amsgrad false # 8"
    assert float(space.fill("{lr}", {"lr": lr})) == lr


def test_grid_takes_lists_only():
    assert space.grid(space.parse("a: [1, 2]; b: [x]")) == {"a": [1, 2], "b": ["x"]}
    with pytest.raises(TorchshError, match="b is a range"):
        space.grid(space.parse("a: [1]; b: uniform(0, 1)"))



@pytest.mark.parametrize("text,says", [
    ("lr: uniform(nan, 1)", "uniform(…) needs finite numbers, got nan"),
    ("lr: uniform(0, inf)", "needs finite numbers, got inf"),
    ("lr: loguniform(-inf, 1)", "needs finite numbers, got -inf"),
    ("q: quniform(0, 1, nan)", "needs finite numbers, got nan"),
    ("lr: uniform(2, 1)", "uniform(2, 1): low is above high"),
    ("lr: loguniform(0, 1)", "loguniform needs a low end above 0, got 0"),
    ("n: logint(-2, 8)", "logint needs a low end above 0, got -2"),
    ("n: int(1, 99999999999999999999)", "99999999999999999999 is too large"),
    ("lr: uniform(0, 1e999999)", "needs finite numbers, got inf"),
    ("n: int(1, 8, 0)", "int's step must be above 0, got 0"),
    ("a: [nan, 1]", "nan cannot be a choice"),
])
def test_a_range_optuna_would_take_and_fail_on_later_is_refused_with_a_hint(text, says):
    """These reached Optuna (or a trial's flag) and came back as internal_error mid-sweep."""
    with pytest.raises(TorchshError) as e:
        space.parse(text)
    assert e.value.code == "bad_argument" and says in e.value.message, e.value.message
    assert e.value.hint, "a refusal says what to write instead"
