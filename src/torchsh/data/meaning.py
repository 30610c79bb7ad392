"""What a model's numbers stand for, kept beside the model: the `classes` of its output's indices, the
`categories` of its one-hot inputs and the `standardization` its inputs were trained under.

`torch fit` learns them from its training loader's dataset (datasets.known) and attaches them to the model
object (the `torchsh_data` attribute, a plain dict of JSON values). They go wherever the model goes: run.json
and fit's checkpoints (logdir.py, checkpoint.py: `torch checkpoint load` and `torch nn load` attach them
again), a .safetensors of `torch nn save` (its metadata's `data`, verbs/nn_files.py; a .pt is Python's plain
state_dict and keeps none), and the module's recipe (recipes/modules.py: `session save|load`, `cp`, `session
push`, --persist, a distributed fit's ranks). `torch predict` names its classes with them when the dataset it
predicts on has none, and standardizes raw rows with them; `torch model inspect` shows a file's.
"""
from torchsh.data.datasets import known

ATTRIBUTE = "torchsh_data"
KEYS = ("classes", "categories", "standardization")
_TYPES = {"classes": list, "categories": dict, "standardization": dict}


def of_dataset(dataset):
    """{classes?, categories?, standardization?} that the dataset (or one it wraps) knows, as JSON values."""
    out = {}
    for key in KEYS:
        value = known(dataset, key)
        if value:
            out[key] = dict(value) if isinstance(value, dict) else list(value)
    return out


def of_model(model):
    """What was attached to the model ({} when nothing was)."""
    return dict(getattr(model, ATTRIBUTE, None) or {})


def valid(meaning):
    """The parts of `meaning` that are what they claim to be ({} for anything else): a file's metadata may have
    been edited by hand."""
    meaning = meaning if isinstance(meaning, dict) else {}
    meaning = {k: v for k, v in meaning.items() if k in KEYS and isinstance(v, _TYPES[k]) and v}
    if not all(isinstance(c, str) for c in meaning.get("classes", ())):
        meaning.pop("classes")  # its classes are not names
    return meaning


def attach(model, meaning):
    """Keep `meaning` with the model (nothing when it is empty: a model keeps what it knew)."""
    meaning = valid(meaning)
    if meaning:
        object.__setattr__(model, ATTRIBUTE, meaning)  # a plain attribute, outside the state_dict


def lines(meaning):
    """What a meaning says, a line per part, for a terminal (`model inspect`, `nn load`)."""
    meaning, out = valid(meaning), []
    if "classes" in meaning:
        out.append("classes: " + " ".join(meaning["classes"]))
    for column, names in sorted(meaning.get("categories", {}).items()):
        out.append("one-hot %s: %s" % (column, " ".join(map(str, names)) if isinstance(names, list) else names))
    stats = meaning.get("standardization")
    if stats:
        out.append("standardization: field %s, mean %s, std %s" % (stats.get("field"), _numbers(stats.get("mean")),
                                                                 _numbers(stats.get("std"))))
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
