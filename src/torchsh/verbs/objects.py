"""The registry from the shell: tensors (census), free."""
from torchsh.memory.budget import human
from torchsh.errors import TorchshError
from torchsh.registry.census import census_rows
from torchsh.registry.names import is_pattern
from torchsh.verbs import verb

COLUMNS = ("HANDLE", "KIND", "SHAPE", "DTYPE", "DEVICE", "BYTES", "GRAD", "AGE", "SCOPE", "NAMES")


@verb("tensors(*, str? kind=None, bool quiet=False) -> Json", category="objects", lockfree=True,
      examples=("torch tensors",
                "torch tensors --kind nn -q"), read_only=True)
def tensors(ctx, kind=None, quiet=False):
    """Every object held (all kinds) as a table like `docker ps`: HANDLE KIND SHAPE DTYPE DEVICE BYTES GRAD
    AGE SCOPE (SHAPE: a model's, optimizer's or scheduler's class). -q/--quiet: handles only; --json: rows."""
    rows = [r for r in census_rows(ctx.registry) if kind in (None, r["kind"])]
    return CensusRows(rows, quiet)


class CensusRows(list):
    """Rows that print as an aligned table (or their keys only), and as JSON under --json or through the API."""
    key, columns = "handle", COLUMNS

    def __init__(self, rows, quiet=False):
        super().__init__(rows)
        self.quiet = quiet

    def text(self):
        if self.quiet:
            return "".join(r[self.key] + "\n" for r in self)
        cells = [self.columns] + [self.cells(r) for r in self]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns) - 1)]
        return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] + "\n" for row in cells)

    def cells(self, r):
        tensor = r["kind"] == "tensor"
        return (r["handle"], r["kind"], shape_text(r), r.get("dtype", "-"), r.get("device", "-"),
                human(r["bytes"]).replace(" ", ""), ("yes" if r.get("requires_grad") else "no") if tensor else "-",
                age_text(r["age_s"]), r["scope"] or "-", " ".join("@" + n for n in r.get("names", ())) or "-")


def shape_text(row):
    """A census row's SHAPE: a tensor's `[2,3]`, another object's class."""
    if row.get("kind") == "tensor":
        return "?" if row.get("shape") is None else "[%s]" % ",".join(str(n) for n in row["shape"])
    return row.get("type", "-")


def age_text(seconds):
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return "%d%s" % (seconds // size, unit)
    return "%ds" % seconds


@verb("free(Handle[] handles) -> None", "free(*, bool all) -> None", category="objects", lockfree=True,
      examples=("torch free $(torch zeros 3) $(torch ones 2)",))
def free(ctx, handles=None, all=False):
    """Free objects by handle or @name (atomic: all or none), or every object with --all. Reads handles from
    stdin. A name pattern (`torch free '@exp1/*'`) frees every object a matching name names; their names go too."""
    handles = None if handles is None else [h for p in handles for h in _matched(ctx.registry, p)]
    ctx.app.jobs.refuse_freeing(ctx.registry, [h for h, _ in ctx.registry.items()] if all else handles)
    if all:
        ctx.registry.free_all()
        return None
    ctx.registry.free(handles)
    return None


def _matched(registry, handle):
    """A handle as it is; a name pattern as the handles its matching names name (unknown_name when none)."""
    if handle[:1] != "@" or not is_pattern(handle):
        return [handle]
    found = sorted({entry.handle for _, entry in registry.names.matching(handle)})
    if not found:
        raise TorchshError("unknown_name", "no name matches %s" % handle, "`torch names` lists the names")
    return found
