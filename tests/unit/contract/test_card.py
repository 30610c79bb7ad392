"""The card as stored: what is kept, what a hand-edited file cannot slip in, and what older files said."""
from torchsh.contract import card as cards

CARD = {"inputs": [{"name": "features", "shape": [2], "dtype": "float32", "columns": ["a", "b"]}],
        "preprocessing": [{"kind": "standardize", "field": 0, "mean": [1.0, 2.0], "std": [0.5, 1.5]}],
        "task": "binary", "decision": "logit>0", "loss": "binary_cross_entropy_with_logits",
        "target": {"name": "y", "shape": [], "dtype": "float32"}, "output": {"shape": []}, "classes": ["no", "yes"]}


def test_a_card_round_trips_through_valid_and_a_stored_dict():
    assert cards.valid(CARD) == CARD
    assert cards.from_stored({"contract": CARD}) == CARD


def test_a_legacy_data_entry_becomes_the_card_it_meant():
    legacy = {"classes": ["x", "y"], "categories": {"c": ["u", "v"]},
              "standardization": {"field": 0, "mean": [1.0], "std": [2.0]}}
    card = cards.from_stored({"data": legacy})
    assert card["classes"] == ["x", "y"] and card["categories"] == {"c": ["u", "v"]}
    assert cards.standardization(card) == {"field": 0, "mean": [1.0], "std": [2.0]}


def test_what_is_not_what_it_claims_is_dropped():
    edited = dict(CARD, task="astrology", decision="coin", classes=[1, 2], output=[3],
                  preprocessing=[{"kind": "standardize", "field": "0"}, {"kind": "rm -rf"}])
    card = cards.valid(edited)
    assert "task" not in card and "decision" not in card and "classes" not in card and "output" not in card
    assert "preprocessing" not in card and card["inputs"] == CARD["inputs"]
    assert cards.valid("not a dict") == {} and cards.from_stored(None) == {}


def test_lines_say_each_fact():
    text = "\n".join(cards.lines(CARD))
    assert "columns a,b" in text and "standardize field 0" in text and "task: binary (decision logit>0" in text
    assert "classes: no yes" in text and "target y: float32 []" in text


def test_a_model_keeps_its_card_outside_its_state_dict():
    import torch
    m = torch.nn.Linear(2, 1)
    cards.attach(m, CARD)
    assert cards.of_model(m) == CARD and list(m.state_dict()) == ["weight", "bias"]
    cards.attach(m, {})  # an empty card changes nothing
    assert cards.of_model(m) == CARD
