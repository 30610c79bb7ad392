"""What every handle kind's persistence is made of: the Persistence row, and the helpers the kinds share.

A kind's Persistence (its row in registry/kinds.py names it) says how its objects outlive a daemon (a
session folder, `cp`, `session push`, a distributed fit's handoff):

    rec = capture(obj, walk)        JSON, no tensors, never pickle: what rebuilds the object's structure
    new = build(rec, walk)          the same structure, with fresh (unfilled) values
    values = state(obj, skip)       {key: tensor}: its values, its non-tensor state as JSON bytes (STATE_JSON)
    load(new, values)               fills what build made, bit for bit

session/recipe.py walks the objects: walk.value(v) writes (capture) or reads back (build) a constructor value,
objects captured alongside as {"ref": name}; walk.refs names them (capture), walk.lookup(name) gives the one
built for a name (build), walk.object(obj) writes an object that is not taken along inside another's recipe.
skip holds the ids of the objects saved under their own names, which state leaves out.
"""
import json
import weakref
from dataclasses import dataclass
from typing import Callable

import torch
from torch.nn.parameter import is_lazy

from torchsh.errors import TorchshError
from torchsh.formats import statefile as nested

STATE_JSON = "_state.json"


def _nothing(obj, skip):
    return {}


def _no_values(obj, values):
    pass


@dataclass(frozen=True)
class Persistence:
    capture: Callable               # (obj, walk) -> its recipe
    build: Callable = None          # (rec, walk) -> a new object like it; None: never built (a job)
    state: Callable = _nothing      # (obj, skip) -> {key: tensor}
    load: Callable = _no_values     # (obj, values) -> None
    inline: Callable = None         # (obj, walk) -> JSON for one inside another's recipe, not taken along;
    #                                 None: not_portable (a value that cannot be written without pickle)
    adopt: Callable = None          # (rec, values, walk) -> built from its values at once, before the others are
    #                                 filled (a tensor: the value read becomes it); None: built, then loaded
    parts: Callable = None          # obj -> [(name, tensor)] it owns: a held tensor among them is saved as that
    part: Callable = None           # (obj, name) -> the tensor of that name in a rebuilt obj


def not_portable(message, hint=None):
    return TorchshError("not_portable", message, hint)


def refused(message, hint=None):
    """The persistence of a kind that is never saved: capturing one is not_portable, with why."""
    def capture(obj, walk):
        raise not_portable(message, hint)
    return Persistence(capture)


def nested_recipe(obj, walk):
    """An object not taken along, written whole inside the recipe that needs it."""
    return {"object": walk.object(obj)}


def class_named(namespace, name, base):
    cls = getattr(namespace, name, None)
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise not_portable("%s is not a %s class of this PyTorch" % (name, base.__name__))
    return cls


def has_data(t):
    """False for what has a shape but no values: a meta tensor, a lazy module's uninitialized parameter."""
    return not (t.is_meta or is_lazy(t))


# -- what torchsh built ----------------------------------------------------------------------------
_MADE = weakref.WeakKeyDictionary()   # module or scheduler -> (class name, constructor values) as built


def record(obj, class_name, values):
    """Remember how torchsh built obj (nn.construct, nn sequential, the sched builder): class and values.
    Values may hold objects (child modules, an optimizer); capture turns them into recipes or refs."""
    _MADE[obj] = (class_name, dict(values))
    return obj


def made(obj, what):
    """(class name, constructor values) torchsh built obj with; not_portable for what it did not build."""
    found = _MADE.get(obj)
    if found is None and isinstance(obj, torch.jit.ScriptModule):
        raise not_portable("a TorchScript module (nn jit_load) has no recipe: its archive holds code, not a recipe",
                           "load the same file with `torch nn jit_load` where it is needed")
    if found is None:
        raise not_portable("this %s (%s) was not built by torchsh's verbs, so there is no recipe to rebuild it"
                           % (what, type(obj).__name__),
                           "a TorchScript module (nn jit_load) stays in its daemon: load its file there")
    return found


# -- non-tensor state as JSON bytes ----------------------------------------------------------------
def json_state(obj):
    """obj.state_dict() as values: its tensors under `state.N`, the JSON skeleton as UTF-8 bytes in a uint8
    tensor under STATE_JSON (an optimizer's step counts, a scheduler's counters, a loader's position)."""
    tensors = {}
    skeleton = nested.encode(obj.state_dict(), "state", tensors)
    tensors[STATE_JSON] = torch.frombuffer(bytearray(json.dumps(skeleton, allow_nan=True).encode()), dtype=torch.uint8)
    return tensors


def state_dict_of(values):
    """The state_dict json_state wrote."""
    return nested.decode(json.loads(bytes(values[STATE_JSON].contiguous().numpy()).decode()), values)


def load_json_state(obj, values):
    obj.load_state_dict(state_dict_of(values))
