"""A daemon's objects as one safetensors stream: the session folder's file, and the body of a bundle.

    8-byte little-endian header length | JSON header | raw tensor bytes      (the safetensors layout)

The header's metadata holds the manifest (JSON, under "torchsh"): every object's handle, kind, scope and
recipe (recipe.py) in an order where what an object refers to comes first; scopes (id, parent, owner);
and the objects left out, each with the reason. Tensor values live under "HANDLE|KEY" (recipe.state_tensors).
A held tensor that is a model's parameter or buffer is written as that (an alias), so it stays the very
same object when restored. Never pickle: JSON and raw bytes only.
"""
import collections.abc
import json

import torch
from safetensors.torch import load as st_load, save as st_save, save_file as st_save_file

from torchsh.formats import stfile
from torchsh.formats.stfile import own_storage
from torchsh.errors import TorchshError
from torchsh.registry.handles import parse_handle
from torchsh.session import recipe

FORMAT = "torchsh-session-1"
_COMPLEX = "#complex"   # safetensors has no complex dtypes: stored as view_as_real, marked by this suffix


def plan(registry, handles=None, failed=()):
    """What a save or copy of these handles (every object held when None) would write, without its values:
    (objects {handle: obj}, recipes {handle: recipe}, aliases, order, skipped [{handle, reason, hint}]).
    failed: [{handle, reason, hint}] of objects whose values could not be read, left out with what needs them."""
    entries = dict(registry.items())
    chosen = list(entries) if handles is None else list(dict.fromkeys(handles))
    gone = {f["handle"] for f in failed}
    objs = {h: entries[h].obj for h in chosen if h not in gone}
    recs, skipped = _portable(objs)
    skipped = list(failed) + skipped
    aliases = _aliases(objs, recs)
    return objs, recs, aliases, _ordered(recs, aliases), skipped


def collect(registry, handles=None, failed=()):
    """(manifest, tensors) for the given handles (every object held when None). An object whose values
    cannot be read is left out, with what needs it, and named in the manifest's `skipped`."""
    objs, recs, aliases, order, skipped = plan(registry, handles, failed)
    kinds = {h: e for h, e in registry.items()}
    objects, tensors = [], {}
    for h in order:
        row = {"handle": h, "kind": kinds[h].kind, "scope": kinds[h].scope}
        if h in aliases:
            row["alias"] = aliases[h]
        else:
            row["recipe"] = recs[h]
            try:
                state = recipe.state_tensors(objs[h], {r: objs[r] for r in recs})
            except (RuntimeError, ValueError, TypeError, TorchshError) as e:  # a device gone, an odd state
                reason = getattr(e, "message", None) or str(e).split("\n")[0][:200]
                return collect(registry, handles, list(failed) + [{"handle": h, "reason": reason, "hint": None}])
            for key, t in state.items():
                _put(tensors, "%s|%s" % (h, key), t)
        objects.append(row)
    saved = {row["handle"] for row in objects}
    manifest = {"format": FORMAT, "epoch": registry.epoch, "objects": objects, "skipped": skipped,
                "scopes": registry.scope_records(), "names": [r for r in registry.names.records() if r[1] in saved]}
    return manifest, tensors


def _portable(objs):
    """Recipes of the objects that can be written, and [{handle, reason}] of the rest. An object that needs
    one left out is left out too, so the loop runs until nothing more drops."""
    keep, skipped = dict(objs), []
    while True:
        recs, dropped = {}, []
        for h, obj in keep.items():
            try:
                recs[h] = recipe.capture(obj, {r: o for r, o in keep.items() if r != h})
            except TorchshError as e:
                dropped.append({"handle": h, "reason": e.message, "hint": e.hint})
            except (RuntimeError, ValueError, TypeError) as e:  # what PyTorch refuses to tell (an odd object)
                dropped.append({"handle": h, "reason": str(e).split("\n")[0][:200], "hint": None})
        for d in dropped:
            del keep[d["handle"]]
        skipped += dropped
        if not dropped:
            return recs, skipped


def _aliases(objs, recs):
    """{tensor handle: {"ref": model handle, "name": …}} for held tensors that a held object owns (a model's)."""
    owned = {}
    for h in recs:
        for name, t in recipe.parts(objs[h]):
            owned.setdefault(id(t), {"ref": h, "name": name})
    return {h: owned[id(objs[h])] for h in recs if id(objs[h]) in owned}


def _ordered(recs, aliases):
    """Handles, each after everything it refers to, otherwise in creation order."""
    deps = {h: ({aliases[h]["ref"]} if h in aliases else recipe.refs_of(recs[h])) & set(recs) for h in recs}
    out, done = [], set()

    def visit(h, path=()):
        if h in done or h in path:
            return
        for d in sorted(deps[h], key=_serial_key):
            visit(d, path + (h,))
        done.add(h)
        out.append(h)
    for h in sorted(recs, key=_serial_key):
        visit(h)
    return out


def _serial_key(handle):
    parsed = parse_handle(handle)
    return (int(parsed[2], 36), handle) if parsed else (0, handle)


def _put(tensors, key, t):
    if t.is_complex():
        tensors[key + _COMPLEX] = torch.view_as_real(t).contiguous()
    else:
        tensors[key] = t


def to_bytes(manifest, tensors):
    return st_save(own_storage(tensors), metadata=_metadata(manifest))


def to_file(manifest, tensors, path):
    """The same stream written straight to PATH (no copy of every value in memory as bytes first)."""
    st_save_file(own_storage(tensors), path, metadata=_metadata(manifest))


def _metadata(manifest):
    return {"torchsh": json.dumps(manifest, allow_nan=True)}


def from_bytes(data, where="the bundle"):
    """(manifest, {handle: {key: tensor}}) of a stream to_bytes wrote; bad_request/file_error if it is not one."""
    try:
        flat = st_load(bytes(data))
        n = int.from_bytes(bytes(data[:8]), "little")
        manifest = json.loads(json.loads(bytes(data[8:8 + n]))["__metadata__"]["torchsh"])
    except Exception as e:  # SafetensorError, JSON and key errors: not a torchsh session at all
        raise TorchshError("file_error", "%s is not a torchsh session: %s" % (where, str(e).split("\n")[0][:120])) from None
    return _per_handle(manifest, flat, where)


def from_file(path):
    """(manifest, {handle: its values}) of a session file, each value read from it when asked for: a session
    loads in about its own size, where reading every value first held it twice (built objects + values)."""
    try:
        f = stfile.File(path)  # stays open while a _Values of it is alive; values never map the file
        keys = f.keys()
        manifest = json.loads((f.metadata() or {})["torchsh"])
    except OSError as e:
        raise TorchshError("file_error", "cannot read %s: %s" % (path, e.strerror or e)) from None
    except TorchshError:
        raise  # it changed while it was read
    except Exception as e:  # SafetensorError, JSON and key errors: not a torchsh session at all
        raise TorchshError("file_error", "%s is not a torchsh session: %s"
                           % (path, str(e).split("\n")[0][:120])) from None
    _check_format(manifest, path)
    per = {}
    for key in keys:
        handle, _, name = key.partition("|")
        per.setdefault(handle, {})[name.removesuffix(_COMPLEX)] = key
    return manifest, {handle: _Values(f, names, path) for handle, names in per.items()}


class _Values(collections.abc.Mapping):
    """One object's values in an open session file: {name: tensor}, each read when looked up."""

    def __init__(self, f, keys, path):
        self._f, self._keys, self._path = f, keys, path  # name -> the file's key

    def __getitem__(self, name):
        key = self._keys[name]
        try:
            t = self._f.read(key)  # a file_error when the file changed since it was opened
        except OSError as e:
            raise TorchshError("file_error", "cannot read %s from %s: %s" % (key, self._path, e.strerror)) from None
        return torch.view_as_complex(t) if key.endswith(_COMPLEX) else t

    def __contains__(self, name):  # Mapping's own would read the value to answer
        return name in self._keys

    def __iter__(self):
        return iter(self._keys)

    def __len__(self):
        return len(self._keys)


def _check_format(manifest, where):
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise TorchshError("file_error", "%s is not a torchsh session (format %r)"
                           % (where, manifest.get("format") if isinstance(manifest, dict) else None))


def _per_handle(manifest, flat, where):
    _check_format(manifest, where)
    per = {}
    for key, t in flat.items():
        handle, _, name = key.partition("|")
        if name.endswith(_COMPLEX):
            name, t = name[:-len(_COMPLEX)], torch.view_as_complex(t)
        per.setdefault(handle, {})[name] = t
    return manifest, per


def rebuild(manifest, tensors):
    """{old handle: object} for every object in the manifest, all built, then all filled (nothing is held yet)."""
    built = {}

    def lookup(ref):
        if ref not in built:
            raise TorchshError("file_error", "the session refers to %s, which it does not hold" % ref)
        return built[ref]
    for row in manifest["objects"]:
        if "alias" in row:
            built[row["handle"]] = recipe.part(lookup(row["alias"]["ref"]), row["alias"]["name"])
        elif recipe.adopts(row["kind"]):   # values now: a constructor may read them (a distribution checks its scale)
            built[row["handle"]] = recipe.adopt(row["recipe"], tensors.get(row["handle"], {}), lookup)
        else:
            built[row["handle"]] = recipe.build(row["recipe"], lookup)
    for row in manifest["objects"]:   # the rest once all are built: a scheduler's constructor changes its optimizer
        if "recipe" in row and not recipe.adopts(row["kind"]):
            recipe.load_state(built[row["handle"]], tensors.get(row["handle"], {}))
    return built


def detached_count(manifest):
    return sum(1 for row in manifest["objects"] if row.get("recipe", {}).get("graph"))
