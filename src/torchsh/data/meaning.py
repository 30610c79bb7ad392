"""What a model's numbers stand for, kept beside the model: the `classes` of its output's indices, the
`categories` of its one-hot inputs and the `standardization` its inputs were trained under.

`torch fit` learns them from its training loader's dataset (datasets.known) and attaches them to the model
object (the `torchsh_data` attribute, a plain dict of JSON values); run.json and fit's checkpoints keep them
(logdir.py, checkpoint.py), `torch checkpoint load` attaches them again, and `torch predict` names its
classes with them when the dataset it predicts on has none.
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


def attach(model, meaning):
    """Keep `meaning` with the model (nothing when it is empty: a model keeps what it knew)."""
    meaning = {k: v for k, v in (meaning or {}).items() if k in KEYS and isinstance(v, _TYPES[k]) and v}
    if not all(isinstance(c, str) for c in meaning.get("classes", ())):
        meaning.pop("classes")  # a checkpoint's metadata edited by hand: its classes are not names
    if meaning:
        object.__setattr__(model, ATTRIBUTE, meaning)  # a plain attribute, outside the state_dict
