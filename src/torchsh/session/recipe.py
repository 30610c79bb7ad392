"""Recipes: how to rebuild an object without its tensors (JSON), and the tensors that fill it back.

    rec = capture(obj, refs)          # JSON-able dict; never pickle
    new = build(rec, lookup)          # the same structure, fresh (uninitialised) values
    load_state(new, state_tensors(obj, refs))   # the values, bit for bit (safetensors-able tensors)

Each handle kind does it its own way: its row in registry/kinds.py names its Persistence (recipes/: tensors,
modules, optimizers and schedulers, datasets and loaders, distributions; a job is never saved). This module
walks the objects for them: it finds an object's row, and writes and reads the constructor values.

refs maps a name (a handle) to an object captured alongside: a sub-object found there by identity (a held
child module, the dataset a transform wraps, an optimizer's modules, a scheduler's optimizer) is written
{"ref": name} and `build` asks `lookup(name)` for the object built for it, so shared objects stay shared.
Build everything first, then load every state: a scheduler's constructor changes its optimizer's lr,
which the optimizer's state then sets back. `refs_of(rec)` names what a recipe needs built before it.
"""
import json
import math

import torch

from torchsh.recipes.base import not_portable
from torchsh.registry.kinds import HANDLE_KINDS, kind_of
from torchsh.vocab import DTYPES, dtype_name


def persistence(kind):
    """The Persistence of a handle kind (a recipe's "kind"), or None for what no row names."""
    row = HANDLE_KINDS.get(kind)
    return row.persist if row is not None else None


def capture(obj, refs=None):
    """A JSON-able dict that `build` turns back into an object like obj (without its values)."""
    return _Capture(refs or {}).capture(obj)


def build(rec, lookup):
    """An object from its recipe; lookup(name) (or lookup[name]) gives the object already built for a {"ref": name}."""
    kind = rec.get("kind")
    persist = persistence(kind)
    if persist is None or persist.build is None:
        raise not_portable("unknown recipe kind %r" % kind)
    return persist.build(rec, _Build(lookup))


def adopts(kind):
    """Whether objects of this kind are made from their values at once (a tensor), not built and then loaded."""
    persist = persistence(kind)
    return persist is not None and persist.adopt is not None


def adopt(rec, values, lookup):
    return persistence(rec["kind"]).adopt(rec, values, _Build(lookup))


def state_tensors(obj, refs=None):
    """What safetensors holds for obj: its values (and grads), and its non-tensor state as JSON bytes.
    Objects in refs are left out (each is saved under its own name)."""
    skip = {id(o) for o in (refs or {}).values()} - {id(obj)}
    persist = persistence(kind_of(obj))
    return persist.state(obj, skip) if persist is not None else {}


def load_state(obj, tensors):
    """Fill obj (built from its recipe) with the values state_tensors gave."""
    persist = persistence(kind_of(obj))
    if persist is not None:
        with torch.no_grad():
            persist.load(obj, tensors)


def parts(obj):
    """[(name, tensor)] obj owns (a module's parameters and buffers): a held one is saved as a reference to it."""
    persist = persistence(kind_of(obj))
    return persist.parts(obj) if persist is not None and persist.parts is not None else []


def part(obj, name):
    return persistence(kind_of(obj)).part(obj, name)


class _Capture:
    """The walk of a capture: refs {name: object taken along}, found by identity (ids) in constructor values."""

    def __init__(self, refs, ids=None):
        self.refs = refs
        self.ids = {id(o): name for name, o in refs.items()} if ids is None else ids

    def capture(self, obj):
        kind = kind_of(obj)
        if kind is None:
            raise not_portable("a %s cannot be saved or copied" % type(obj).__name__)
        return HANDLE_KINDS[kind].persist.capture(obj, self)

    def object(self, obj):
        """The recipe of an object written inside another's: it finds the same objects by identity, no refs."""
        return _Capture({}, self.ids).capture(obj)

    def value(self, v, refs=True):
        """A constructor value as JSON: objects taken along as {"ref"}, others as their kind writes them inside
        (tensors inline, modules, schedulers and datasets as their own recipe); refs=False: no object is a ref."""
        if not refs:
            return _Capture({}, {}).value(v)
        kind = kind_of(v)
        if kind is not None and id(v) in self.ids:
            return {"ref": self.ids[id(v)]}
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"float": repr(v)}
        if isinstance(v, (list, tuple)):
            items = [self.value(x) for x in v]
            return items if isinstance(v, list) else {"tuple": items}
        if isinstance(v, dict):
            return {"dict": [[self.value(k), self.value(x)] for k, x in v.items()]}
        if isinstance(v, torch.dtype):
            return {"dtype": dtype_name(v)}
        if isinstance(v, torch.device):
            return {"device": str(v)}
        inline = HANDLE_KINDS[kind].persist.inline if kind is not None else None
        if inline is None:
            raise not_portable("a %s value cannot be written without pickle" % type(v).__name__)
        return inline(v, self)


class _Build:
    """The walk of a build: lookup(name) gives the object built for a {"ref": name}."""

    def __init__(self, lookup):
        self.lookup = lookup.__getitem__ if isinstance(lookup, dict) else lookup

    def value(self, v):
        """The value a capture's value() wrote."""
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "ref" in v:
            return self.lookup(v["ref"])
        if "float" in v:
            return float(v["float"])
        if "tuple" in v:
            return tuple(self.value(x) for x in v["tuple"])
        if "dict" in v:
            return {self.value(k): self.value(x) for k, x in v["dict"]}
        if "dtype" in v and "tensor" not in v:
            return DTYPES[v["dtype"]]
        if "device" in v and "tensor" not in v:
            return torch.device(v["device"])
        if "tensor" in v:
            return torch.tensor(v["tensor"], dtype=DTYPES[v["dtype"]], device=v["device"])
        if "object" in v:
            return build(v["object"], self.lookup)
        raise not_portable("unreadable recipe value %s" % json.dumps(v)[:80])


def refs_of(rec):
    """The names a recipe refers to (what must be built before it)."""
    out = set()

    def walk(v):
        if isinstance(v, dict):
            if set(v) == {"ref"} or (set(v) == {"ref", "param"}):
                out.add(v["ref"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(rec)
    return out
