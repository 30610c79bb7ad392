"""Discovery: `torch ops [CATEGORY] [--search WORD] [--json]`."""
from torchsh.cli import help as cli_help
from torchsh.errors import bad_argument
from torchsh.verbs import verb


class OpRows(list):
    def __init__(self, ops):
        super().__init__(op.to_json() for op in ops)
        self._ops = ops

    def text(self):
        return cli_help.ops_table(self._ops)


@verb("ops(str? category=None, *, str? search=None) -> Json", category="shell", lockfree=True)
def ops(ctx, category=None, search=None):
    """List ops and verbs: name, category, summary (--json adds the typed signatures)."""
    if category is not None and category not in cli_help.categories():
        raise bad_argument("unknown category %r" % category, "categories: %s" % ", ".join(cli_help.categories()))
    rows = ctx.table.in_category(category)
    if search:
        word = search.lower()
        rows = [op for op in rows if word in op.name.lower() or word in op.summary.lower()]
    return OpRows(sorted(rows, key=lambda op: op.name))
