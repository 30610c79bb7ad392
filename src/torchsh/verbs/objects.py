"""The registry from the shell: tensors (census), free."""
from torchsh.jobs.job import refuse_freeing_in_use
from torchsh.memory.budget import human
from torchsh.registry.census import census_rows
from torchsh.verbs import verb

COLUMNS = ("HANDLE", "KIND", "SHAPE", "DTYPE", "DEVICE", "BYTES", "GRAD", "AGE", "SCOPE")


@verb("tensors(*, str? kind=None, bool quiet=False) -> Json", category="objects", lockfree=True,
      examples=("torch tensors",
                "torch tensors --kind nn -q"))
def tensors(ctx, kind=None, quiet=False):
    """Every object held (all kinds) as a table like `docker ps`: HANDLE KIND SHAPE DTYPE DEVICE BYTES GRAD
    AGE SCOPE (SHAPE: a model's, optimizer's or scheduler's class). -q/--quiet: handles only; --json: rows."""
    rows = [r for r in census_rows(ctx.registry) if kind in (None, r["kind"])]
    return CensusRows(rows, quiet)


class CensusRows(list):
    """Rows that print as an aligned table (or handles only), and as JSON under --json or through the API."""

    def __init__(self, rows, quiet=False):
        super().__init__(rows)
        self.quiet = quiet

    def text(self):
        if self.quiet:
            return "".join(r["handle"] + "\n" for r in self)
        cells = [COLUMNS] + [_cells(r) for r in self]
        widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS) - 1)]
        return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] + "\n" for row in cells)


def _cells(r):
    tensor = r["kind"] == "tensor"
    if tensor:
        shape = "?" if r.get("shape") is None else "[%s]" % ",".join(str(n) for n in r["shape"])
    else:
        shape = r.get("type", "-")
    return (r["handle"], r["kind"], shape, r.get("dtype", "-"), r.get("device", "-"),
            human(r["bytes"]).replace(" ", ""), ("yes" if r.get("requires_grad") else "no") if tensor else "-",
            _age(r["age_s"]), r["scope"] or "-")


def _age(seconds):
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return "%d%s" % (seconds // size, unit)
    return "%ds" % seconds


@verb("free(Handle[] handles) -> None", "free(*, bool all) -> None", category="objects", lockfree=True,
      examples=("torch free $(torch zeros 3) $(torch ones 2)",))
def free(ctx, handles=None, all=False):
    """Free objects by handle (atomic: all or none), or every object with --all. Reads handles from stdin."""
    refuse_freeing_in_use(ctx.registry, [h for h, _ in ctx.registry.items()] if all else handles)
    if all:
        ctx.registry.free_all()
        return None
    ctx.registry.free([h if isinstance(h, str) else h for h in handles])
    return None
