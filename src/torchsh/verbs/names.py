"""Names from the shell: `torch name HANDLE @NAME` and `torch names ['@exp1/*']` (registry/names.py).

`--name NAME` on any command that makes an object is the global flag (call/parse.py GLOBAL_FLAGS, Context.put).
"""
import time

from torchsh.registry import names as registry_names
from torchsh.registry.census import object_row
from torchsh.verbs import verb
from torchsh.verbs.objects import CensusRows, age_text, shape_text

COLUMNS = ("NAME", "HANDLE", "KIND", "SHAPE", "AGE", "TTL")


@verb("name(Handle handle, str name, *, bool force=False, str? ttl=None) -> None", category="objects",
      lockfree=True, examples=("torch name $(torch zeros 2) @zero2 --force",
                               "torch name $(torch randn 3 4) @exp1/w --ttl 30m --force"))
def name(ctx, handle, name, force=False, ttl=None):
    """Name an object: `@NAME` is then accepted wherever its handle is, and pins it (a scope's end keeps it).

    A name held by another object is name_in_use; --force moves it, and the earlier object stays reachable
    as @NAME~1 (then ~2, …). --ttl 30m: the name expires then, and frees its object (45s, 30m, 2h, 1d).
    """
    ttl_s = registry_names.parse_ttl(ttl) if ttl is not None else None
    ctx.registry.name(handle, registry_names.check_name(name), force, ttl_s)


@verb("names(str? pattern=None, *, bool quiet=False) -> Json", category="objects", lockfree=True,
      examples=("torch names", "torch names '@exp1/*'"), read_only=True)
def names(ctx, pattern=None, quiet=False):
    """The names held, as a table: NAME HANDLE KIND SHAPE AGE TTL; a pattern (`@exp1/*`) keeps those it
    matches; -q/--quiet: names only; --json: rows (each with its reflog, the earlier targets @NAME~1 …)."""
    ctx.registry.expire_names()
    rows, now, held = [], time.time(), dict(ctx.registry.items())  # one look: a free meanwhile cannot fail it
    for n, entry in ctx.registry.names.matching(pattern):
        obj = held.get(entry.handle)
        census = object_row(entry.handle, obj, now) if obj else {}
        rows.append({"name": "@" + n, "handle": entry.handle, "kind": census.get("kind"), "shape": shape_text(census),
                     "age_s": round(now - entry.created, 3),
                     "ttl_s": None if entry.expires is None else round(max(entry.expires - now, 0), 3),
                     "reflog": list(entry.reflog)})
    return NameRows(rows, quiet)


class NameRows(CensusRows):
    key, columns = "name", COLUMNS

    def cells(self, r):
        ttl = "-" if r["ttl_s"] is None else age_text(r["ttl_s"])
        return (r["name"], r["handle"], r["kind"] or "-", r["shape"], age_text(r["age_s"]), ttl)
