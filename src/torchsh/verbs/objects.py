"""The registry from the shell: tensors (census), free."""
from torchsh.cli.render import Text
from torchsh.registry.census import census_rows
from torchsh.verbs import verb


@verb("tensors(*, str? kind=None) -> Json", category="objects", lockfree=True)
def tensors(ctx, kind=None):
    """Every object held (all kinds): shape, dtype, device, bytes, requires_grad, age. --json for rows."""
    rows = [r for r in census_rows(ctx.registry) if kind in (None, r["kind"])]
    return CensusRows(rows)


class CensusRows(list):
    """Rows that print as a table, and as JSON under --json or through the API."""

    def text(self):
        if not self:
            return ""
        lines = []
        for r in self:
            if r["kind"] == "tensor":
                what = "%s %s %s %dB%s" % (r["dtype"], r["shape"], r["device"], r["bytes"],
                                           " requires_grad" if r["requires_grad"] else "")
            else:
                what = r.get("type", "")
            lines.append("%-24s %s  %.0fs" % (r["handle"], what, r["age_s"]))
        return "\n".join(lines) + "\n"


@verb("free(Handle[] handles) -> None", "free(*, bool all) -> None", category="objects", lockfree=True)
def free(ctx, handles=None, all=False):
    """Free objects by handle (atomic: all or none), or every object with --all. Reads handles from stdin."""
    if all:
        ctx.registry.free_all()
        return None
    ctx.registry.free([h if isinstance(h, str) else h for h in handles])
    return None
