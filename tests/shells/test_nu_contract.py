"""Issue 36 in Nushell: the model's card is a record (`torch model card M`), `torch predict M D` a table, and the
refusals the card makes possible (columns in another order, cross_entropy on a one-output head) are nu errors
that try/catch takes, carrying their code and the fix."""
import json


def _tables(sh):
    """A training table and the same rows with their columns swapped."""
    train, swapped = sh.tmp("t.csv"), sh.tmp("swapped.csv")
    with open(train, "w") as f:
        f.write("a,b,kind\n1,2,x\n3,4,y\n5,6,x\n7,1,y\n")
    with open(swapped, "w") as f:
        f.write("b,a,kind\n2,1,x\n4,3,y\n")
    return train, swapped


def test_a_card_is_a_record_predict_a_table_and_the_cards_refusals_catchable_errors(nu, sh):
    train, swapped = _tables(sh)
    got = nu.json("""
let d = (torch data open '%s' --target kind)
let L = (torch data loader $d --batch_size 2)
let m = (torch nn linear 2 2)
torch fit $m (torch optim sgd $m) $L --loss cross_entropy | ignore
let card = (torch model card $m)
let one = (torch nn linear 2 1)
let order = (try { torch predict $m (torch data open '%s' --target kind); {} } catch {|e| $e.details })
let head = (try { torch fit $one (torch optim sgd $one) $L --loss cross_entropy; {} } catch {|e| $e.details })
{card_type: ($card | describe), task: $card.task, columns: ($card.inputs.0.columns), classes: $card.classes,
 untrained: (torch model card (torch nn linear 2 2) | describe),
 predict_type: (torch predict $m $d | describe), predictions: (torch predict $m $d | get prediction),
 order: $order, head: $head}""" % (train, swapped))
    assert got["card_type"].startswith("record<") and got["untrained"].startswith("record")
    assert (got["task"], got["columns"], got["classes"]) == ("multiclass", ["a", "b"], ["x", "y"])
    assert got["predict_type"].startswith("table<") and all(p in ("x", "y") for p in got["predictions"])
    assert len(got["predictions"]) == 4
    assert got["order"]["code"] == "torchsh::shape_mismatch", got["order"]
    assert "column 0 is 'b'" in got["order"]["msg"] and got["order"]["help"] == "open it with --columns a,b"
    assert got["head"]["code"] == "torchsh::shape_mismatch", got["head"]
    assert "one output" in got["head"]["msg"] and "binary_cross_entropy_with_logits" in got["head"]["help"]


def test_a_card_in_nu_is_the_card_bash_prints_as_json(nu, sh):
    train, _ = _tables(sh)
    m = sh("m=$(torch nn linear 2 2); torch fit $m $(torch optim sgd $m) $(torch data loader $(torch data open %s "
           "--target kind) --batch_size 2) --loss cross_entropy >/dev/null 2>&1; echo $m" % train)
    assert nu.json("torch model card %s" % m) == json.loads(sh("torch model card %s --json" % m))
