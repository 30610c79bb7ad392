"""A model's contract as it is stored: one JSON object, the model card, kept with the model wherever it goes.

    inputs         [{name, shape, dtype, columns?}]: each input field the model takes, one item's shape and dtype,
                   and a table's column names in order
    categories     {column: [names]}: one-hot input columns and their categories, in order
    preprocessing  [{kind: "standardize", field, mean, std}]: what is done to raw inputs, in order (one row per
                   kind; encode.py applies them)
    task           regression | binary | multiclass | multilabel (tasks.py); decision: argmax | logit>0 | p>0.5 |
                   identity; loss: the loss it was trained with, loss_args: its options (a tensor's as a list)
    target         {name, shape, dtype}: one item's target as the loss took it (after --target_dtype and any view)
    output         {shape}: one item's output
    classes        [names] of the class indices (binary: the names of 0 and 1)

`torch fit` records it (learn.py) from the data it trains on; it is the model's attribute ATTRIBUTE, a plain
dict of JSON values outside the state_dict, and goes into run.json, checkpoints, a .safetensors' metadata, a
.pt's sidecar FILE.card.json, a session's recipe and `history --python`. Files written before the card was a
contract kept part of it under "data" ({classes, categories, standardization}): from_stored reads both.
"""
ATTRIBUTE = "torchsh_contract"
STORED_KEY, LEGACY_KEY = "contract", "data"
_LISTS = ("inputs", "preprocessing", "classes")
_STRINGS = ("task", "decision", "loss")
_DICTS = ("categories", "target", "output", "loss_args")
TASKS = ("regression", "binary", "multiclass", "multilabel")
DECISIONS = ("argmax", "logit>0", "p>0.5", "identity")


def of_model(model):
    """The model's card ({} when it has none)."""
    return dict(getattr(model, ATTRIBUTE, None) or {})


def attach(model, card):
    """Keep CARD with the model (an empty one changes nothing: a model keeps what it knew)."""
    card = valid(card)
    if card:
        object.__setattr__(model, ATTRIBUTE, card)  # a plain attribute, outside the state_dict


def from_stored(meta):
    """The card in a stored dict (checkpoint metadata, a recipe, run.json): its "contract", else the legacy
    "data" of files written before ({classes, categories, standardization})."""
    if not isinstance(meta, dict):
        return {}
    if isinstance(meta.get(STORED_KEY), dict):
        return valid(meta[STORED_KEY])
    return valid(meta.get(LEGACY_KEY))


def valid(card):
    """The parts of CARD that are what they claim to be ({} for anything else): a file's metadata may have been
    edited by hand. A legacy `standardization` becomes a preprocessing row."""
    card = dict(card) if isinstance(card, dict) else {}
    legacy = card.pop("standardization", None)
    if isinstance(legacy, dict) and not card.get("preprocessing"):
        card["preprocessing"] = [dict(legacy, kind="standardize")]
    out = {}
    for key, value in card.items():
        if (key in _LISTS and isinstance(value, list) and value) or (key in _DICTS and isinstance(value, dict)
                                                                     and value):
            out[key] = value
        elif key in _STRINGS and isinstance(value, str) and value:
            out[key] = value
    if not all(isinstance(c, str) for c in out.get("classes", ())):
        out.pop("classes")  # its classes are not names
    out["preprocessing"] = [p for p in out.get("preprocessing", ()) if _valid_step(p)]
    if not out["preprocessing"]:
        del out["preprocessing"]
    if out.get("task") not in TASKS:
        out.pop("task", None)
    if out.get("decision") not in DECISIONS:
        out.pop("decision", None)
    return out


def _valid_step(step):
    """A preprocessing row: a standardize step with its statistics, or a kind this version does not know, kept
    so that every verb refuses it by name (encode.py) rather than feed the model rows it was not trained on."""
    if not isinstance(step, dict) or not isinstance(step.get("kind"), str) or not isinstance(step.get("field"), int):
        return False
    if step["kind"] != "standardize":
        return True
    return isinstance(step.get("mean"), (list, float, int)) and isinstance(step.get("std"), (list, float, int))


def standardization(card):
    """{field, mean, std} of the card's standardize step, or None."""
    return next(({k: v for k, v in p.items() if k != "kind"} for p in card.get("preprocessing", ())
                 if p.get("kind") == "standardize"), None)


def lines(card):
    """What a card says, a line per part, for a terminal (`model card`, `model inspect`, `nn load`)."""
    card, out = valid(card), []
    for i, field in enumerate(card.get("inputs", ())):
        columns = field.get("columns")
        out.append("input %d %s: %s %s%s" % (i, field.get("name"), field.get("dtype"), field.get("shape"),
                                             " columns " + ",".join(map(str, columns)) if columns else ""))
    for column, names in sorted(card.get("categories", {}).items()):
        out.append("one-hot %s: %s" % (column, " ".join(map(str, names)) if isinstance(names, list) else names))
    for step in card.get("preprocessing", ()):
        out.append("preprocessing: standardize field %s, mean %s, std %s" % (step.get("field"),
                                                                            _numbers(step.get("mean")),
                                                                            _numbers(step.get("std"))))
    if "task" in card:
        out.append("task: %s (decision %s%s)" % (card["task"], card.get("decision", "?"),
                                                 ", loss %s" % card["loss"] if "loss" in card else ""))
    if "target" in card:
        t = card["target"]
        out.append("target %s: %s %s" % (t.get("name", ""), t.get("dtype"), t.get("shape")))
    if "output" in card:
        out.append("output: %s" % card["output"].get("shape"))
    if "classes" in card:
        out.append("classes: " + " ".join(card["classes"]))
    return out


def _numbers(values, shown=6):
    """A list of statistics (nested for a field of more than one dimension), its first few to 4 digits."""
    flat, todo = [], [values]
    while todo and len(flat) <= shown:
        v = todo.pop(0)
        if isinstance(v, list):
            todo[:0] = v
        elif isinstance(v, (int, float)):
            flat.append("%.4g" % v)
    return "[%s%s]" % (" ".join(flat[:shown]), " …" if len(flat) > shown or todo else "")
