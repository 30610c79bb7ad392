"""Inputs against a card: what fits goes in preprocessed as in training; what does not is refused with the fix."""
import pytest
import torch

from torchsh.contract import encode
from torchsh.data.datasets import FileDataset, TensorField
from torchsh.data.standardize import standardize
from torchsh.data.transforms import Step, TransformedDataset
from torchsh.errors import TorchshError

STATS = {"field": 0, "mean": [1.0, 2.0], "std": [2.0, 4.0]}
CARD = {"inputs": [{"name": "features", "shape": [2], "dtype": "float32", "columns": ["a", "b"]}],
        "preprocessing": [dict(STATS, kind="standardize")], "target": {"name": "y", "shape": [], "dtype": "int64"}}
X = torch.tensor([[1.0, 2.0], [3.0, 6.0], [5.0, 4.0]])


def _table(columns=("a", "b"), x=X):
    return FileDataset([TensorField("features", x, columns=list(columns)), TensorField("y", torch.tensor([0, 1, 0]))])


def test_raw_rows_are_standardized_with_the_training_statistics():
    data = encode.dataset(CARD, _table())
    assert torch.equal(data[1][0], standardize(X[1], STATS["mean"], STATS["std"]))


def test_rows_standardized_with_the_same_statistics_pass_as_they_are():
    already = TransformedDataset(_table(), [Step("standardize", 0, (STATS["mean"], STATS["std"]))])
    assert encode.dataset(CARD, already) is already


def test_rows_standardized_with_other_statistics_are_refused():
    other = TransformedDataset(_table(), [Step("standardize", 0, ([0.0, 0.0], [1.0, 1.0]))])
    with pytest.raises(TorchshError, match="statistics of its own") as e:
        encode.dataset(CARD, other)
    assert e.value.code == "state_mismatch"


@pytest.mark.parametrize("columns,message,hint", [
    (("b", "a"), "column 0 is 'b' where the model was trained on 'a'", "--columns a,b"),
    (("a", "c"), "lacks b", "open a table"),
])
def test_columns_out_of_place_are_refused_with_the_fix(columns, message, hint):
    with pytest.raises(TorchshError, match=message) as e:
        encode.dataset(CARD, _table(columns))
    assert hint in e.value.hint and e.value.code == "shape_mismatch"


def test_an_item_of_another_width_is_refused():
    data = FileDataset([TensorField("features", torch.ones(3, 3))])
    with pytest.raises(TorchshError, match=r"items of shape \[3\], and the model was trained on \[2\]"):
        encode.dataset(CARD, data)


def test_a_batch_is_preprocessed_as_its_items_are_bit_for_bit():
    batch = encode.batch(CARD, [X])
    items = torch.stack([encode.dataset(CARD, _table())[i][0] for i in range(3)])
    assert torch.equal(batch[0], items)


def test_a_card_without_inputs_checks_nothing():
    data = FileDataset([TensorField("x", torch.ones(2, 7))])
    assert encode.dataset({}, data) is data


def test_a_preprocessing_kind_this_version_does_not_apply_is_refused_by_name():
    from torchsh.contract import card as cards
    card = cards.valid(dict(CARD, preprocessing=[{"kind": "tokenize", "field": 0}]))
    assert card["preprocessing"] == [{"kind": "tokenize", "field": 0}]  # kept, so that it can be refused
    with pytest.raises(TorchshError, match="preprocessed by tokenize") as e:
        encode.dataset(card, _table())
    assert e.value.code == "not_supported"
    with pytest.raises(TorchshError, match="tokenize"):
        encode.batch(card, [X])
