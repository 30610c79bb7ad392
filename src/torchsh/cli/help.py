"""Usage lines, `torch OP --help`, the overview, and `torch ops` listings, all rendered from table rows."""
from torchsh.cli.render import Text
from torchsh.table.categories import CATEGORIES

VERB_CATEGORIES = ("tensors", "files", "autograd", "nn", "optim", "objects", "daemon", "shell")


def overview(table):
    lines = ["usage: torch OP [TENSOR…] [ARG…] [--flag VALUE…]", "",
             "PyTorch from the shell. Tensors live in the torchd daemon; handles (tensor://…) flow",
             "through $(…), pipes and variables. Stdin fills the leftmost missing tensor slots.", "",
             "  torch ops [CATEGORY] [--search WORD]   list the %d ops and verbs" % len(table),
             "  torch OP --help                        signature, arguments, PyTorch's docs",
             "  torch daemon status                    the daemon: pid, uptime, objects, memory", "",
             "exit status: 0 ok, 1 internal error, 2 usage, 3 handle, 4 PyTorch refused, 5 daemon unavailable, 6 file",
             ""]
    return Text("\n".join(lines))


def op_help(op):
    lines = [op.usage(), ""]
    if op.doc:
        lines += [op.doc, ""]
    for ov in op.overloads:
        lines.append("  " + ov.signature("torch." + op.name if not op.verb else op.name))
    lines.append("")
    lines.append("arguments:")
    for name, a in op.flags().items():
        default = "" if a.required else "  (default: %s)" % ("None" if a.default is None else a.default)
        if a.default is not None and a.default is not False and "MISSING" in repr(a.default):
            default = ""
        where = "flag" if a.keyword_only else "positional or flag"
        lines.append("  %-22s %-12s %s%s" % ("--" + name, a.type_text or a.kind, where, default))
    lines += ["", "category: %s" % op.category]
    if op.aliases:
        lines.append("aliases: %s" % ", ".join(op.aliases))
    return Text("\n".join(lines) + "\n")


def ops_table(ops):
    width = max((len(op.name) for op in ops), default=10)
    rows = ["%-*s  %-10s  %s" % (width, op.name, op.category, op.summary) for op in sorted(ops, key=lambda o: o.name)]
    return Text("\n".join(rows) + ("\n" if rows else ""))


def categories():
    return CATEGORIES + VERB_CATEGORIES
