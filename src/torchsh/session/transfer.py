"""Sessions and bundles in and out of a registry: save/load a session folder, export/import a bundle.

A session folder holds one file, session.safetensors (snapshot.py's stream), written atomically and
fsync'd (fileio.atomic_write). A bundle is the same stream over HTTP (`cp`, `session push`). Restoring
builds and fills every object before any is held, so a bad stream changes nothing.
"""
import os

from torchsh import fileio
from torchsh.errors import TorchshError
from torchsh.registry import names
from torchsh.session import snapshot

SESSION_FILE = "session.safetensors"


def save_folder(registry, folder):
    """Write every object held to FOLDER/session.safetensors; returns the manifest (with what was skipped)."""
    manifest, tensors = snapshot.collect(registry)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as e:
        raise fileio.file_error(folder, "write", e) from None
    fileio.atomic_write(os.path.join(folder, SESSION_FILE), lambda tmp: snapshot.to_file(manifest, tensors, tmp))
    return manifest


def read_folder(folder):
    """(manifest, tensors) of FOLDER/session.safetensors, for hold()."""
    path = os.path.join(folder, SESSION_FILE)
    if not os.path.exists(path):
        raise TorchshError("file_error", "no session in %s (%s is missing)" % (folder, SESSION_FILE),
                           "`torch session save DIR` writes one")
    fileio.regular_file(path)
    return snapshot.from_file(path)


def restore(registry, data, keep, where, scope=None, owners=True, force=False):
    """hold() of a stream's bytes (a bundle: `cp`, `session push`): its names come along, a name held here
    by another object is name_in_use (before anything is held) unless force moves it."""
    return hold(registry, snapshot.from_bytes(data, where), keep, scope, owners, force)


def hold(registry, stream, keep, scope=None, owners=True, force=None):
    """Hold the objects of a stream, (manifest, tensors). keep: under their own handles (and scopes); else
    under new handles in `scope`. Returns (the handles, in the order the stream was asked for, and the
    manifest). owners=False drops the scopes' owning client processes (a pushed session's clients are on
    another machine). force: how the stream's names meet names held here: None (a session load) keeps
    the ones held here; False refuses with name_in_use; True moves them (registry/names.py)."""
    manifest, tensors = stream
    built = snapshot.rebuild(manifest, tensors)
    rows, arriving = manifest["objects"], manifest.get("names", ())
    if force is not None:
        _check_names(registry, arriving, force)
    if keep:
        scopes = [(sid, parent, owner if owners else None) for sid, parent, owner in manifest.get("scopes", ())]
        registry.restore({r["handle"]: (built[r["handle"]], r["kind"], r["scope"]) for r in rows}, scopes)
        new = {r["handle"]: r["handle"] for r in rows}
    else:
        new = {r["handle"]: registry.put(built[r["handle"]], r["kind"], scope) for r in rows}
    if force is None:
        registry.names.restore(arriving, registry.holds)  # `@enc` names the same object again, reflog too
    else:
        for name, handle, left, _ in arriving:   # the name and its TTL travel; its reflog (other objects) not
            if handle in new:
                registry.name(new[handle], name, force, left)
    order = manifest.get("order") or [r["handle"] for r in rows]
    return [new[h] for h in order if h in new], manifest


def _check_names(registry, arriving, force):
    """Before anything is held: each arriving name well formed, and (unless force) not naming another object
    here: name_in_use, Docker's rule, as --name's."""
    for record in arriving:
        if not (isinstance(record, list) and len(record) == 4 and isinstance(record[1], str)
                and (record[2] is None or isinstance(record[2], (int, float)) and record[2] > 0)):
            raise TorchshError("file_error", "the bundle's names are malformed (%r)" % str(record)[:60])
        name = names.check_name(str(record[0]))
        holder = registry.names.holder(name)
        if not force and holder is not None and registry.holds(holder):
            raise names.in_use(name, holder)


def export(registry, handles):
    """The bundle of these objects (and nothing else): not_portable if one of them cannot go."""
    for h in handles:
        registry.entry(h)   # unknown, stale or malformed handles fail here, by name
    manifest, tensors = snapshot.collect(registry, handles)
    if manifest["skipped"]:
        first = manifest["skipped"][0]
        raise TorchshError("not_portable", "%s cannot be copied: %s" % (first["handle"], first["reason"]), first["hint"])
    manifest["order"] = list(dict.fromkeys(handles))
    return snapshot.to_bytes(manifest, tensors)
