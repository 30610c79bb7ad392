"""shells/complete.py: what TAB offers after `torch WORDS…`, and the words of a Nushell line."""
import pytest

from torchsh.shells import complete
from torchsh.table import build_table

CENSUS = [
    {"handle": "tensor://k3f00001", "kind": "tensor", "shape": [100, 1], "dtype": "float32", "device": "cpu",
     "requires_grad": False},
    {"handle": "tensor://k3f00002", "kind": "tensor", "shape": [3], "dtype": "int64", "device": "cuda:0",
     "requires_grad": True},
    {"handle": "nn://k3f00003", "kind": "nn", "type": "Sequential", "layers": 3, "parameters": 13},
    {"handle": "nn://k3f00004", "kind": "nn", "type": "Linear", "layers": 0, "parameters": 2},
    {"handle": "optim://k3f00005", "kind": "optim", "type": "AdamW", "lr": 0.001},
    {"handle": "sched://k3f00006", "kind": "sched", "type": "StepLR"},
    {"handle": "loader://k3f00007", "kind": "loader", "type": "DataLoader", "batches": 4},
]


@pytest.fixture(scope="module")
def table():
    return build_table()[0]


def _values(table, words):
    return [c for c, _ in complete.candidates(table, CENSUS, words)]


def test_a_handle_slot_offers_handles_of_its_kind_only(table):
    assert _values(table, ["forward", ""]) == ["nn://k3f00003", "nn://k3f00004"]
    assert _values(table, ["forward", "nn://k3f00003", ""]) == ["tensor://k3f00001", "tensor://k3f00002"]
    assert _values(table, ["train_step", "$m", ""]) == ["optim://k3f00005"]
    assert _values(table, ["train_step", "$m", "$o", "$x", "$y", "--sched", ""]) == ["sched://k3f00006"]
    # a flag and its value are no positional words: still the tensor after the model
    assert _values(table, ["forward", "--no_grad", "$m", ""]) == ["tensor://k3f00001", "tensor://k3f00002"]


def test_a_variadic_slot_keeps_offering_its_kind(table):
    assert _values(table, ["cat", "$a", "$b", ""])[:2] == ["tensor://k3f00001", "tensor://k3f00002"]


def test_handles_are_described_by_what_they_hold():
    described = dict(complete.handles(CENSUS))
    assert described["tensor://k3f00001"] == "tensor [100,1] float32"
    assert described["tensor://k3f00002"] == "tensor [3] int64 cuda:0 requires_grad"
    assert described["nn://k3f00003"] == "nn Sequential 3 layers"
    assert described["nn://k3f00004"] == "nn Linear 2 parameters"
    assert described["optim://k3f00005"] == "optim AdamW lr=0.001"
    assert described["loader://k3f00007"] == "loader DataLoader 4 batches"


def test_named_flag_values_complete(table):
    assert _values(table, ["train_step", "$m", "$o", "$x", "$y", "--loss", "cross"]) == ["cross_entropy"]
    assert "mse_loss" in _values(table, ["fit", "$m", "$o", "$l", "--loss", ""])
    assert _values(table, ["fit", "$m", "$o", "$l", "--metrics", ""]) == ["accuracy", "top5", "precision", "recall", "f1", "f1_micro", "confusion", "mae", "rmse", "r2", "perplexity", "tokens"]
    assert _values(table, ["train_step", "$m", "$o", "$x", "$y", "--autocast", ""]) == ["bf16", "fp16"]


@pytest.mark.parametrize("line, words", [
    ("torch add ", ["add", ""]),
    ("torch add $a", ["add", "$a"]),
    ("let x = (torch add $a ", ["add", "$a", ""]),
    ("ls | each {|i| torch forward ", ["forward", ""]),
    ("torch add (torch ones [2]) --al", ["add", "(torch ones [2])", "--al"]),
    ("torch add $a | ignore; torch fit $m $o $l --loss ", ["fit", "$m", "$o", "$l", "--loss", ""]),
    ('$x | torch add "a b" ', ["add", '"a b"', ""]),
    ("torch nn con", ["nn", "con"]),
    ("echo torch ", None),
    ("", None),
])
def test_nu_words_find_the_torch_call_being_typed(line, words):
    assert complete.nu_words(line) == words
