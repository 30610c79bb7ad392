"""Usage lines, `torch OP --help` and the overview, all rendered from table rows."""
import json
import textwrap

from torchsh.cli import examples
from torchsh.errors import exit_status_line
from torchsh.results import Text
from torchsh.table import aliases
from torchsh.table.groups import GROUP_WORDS, listing_rows as _rows
from torchsh.table.spec import MISSING



# An op's arguments in sections of their own after the others: title -> argument names (a verb's rows hold
# no sections; a reader of `torch fit --help` looks for the one-machine flags first)
SECTIONS = {
    "fit": {"distributed (torch.distributed; docs/distributed.md)": (
        "nproc_per_node", "nnodes", "node_rank", "rdzv", "strategy", "timeout", "trusted_network")},
}
# The commands a first session uses most, in the order it meets them: tensors, a step by hand, then training
# on data and what follows it (fit, predict, plot, runs, sweep, serve), language models (lm), then the objects
# held. An order of reading, which no row can say: PyTorch's ops (randn, add…) have no row of ours to mark; a
# group (runs, lm) is listed with its words
COMMON = ("tensor", "randn", "zeros", "value", "print", "shape", "add", "matmul", "sum", "reshape",
          "forward", "train_step", "backward", "step", "fit", "predict", "plot", "runs", "sweep", "serve", "lm",
          "tensors", "free", "save", "load")


def overview(table):
    """`torch`, `torch help`, `torch -h`: the command groups, the commonest commands, where to look next."""
    lines = ["usage: torch OP [TENSOR…] [ARG…] [--flag VALUE…]", "",
             "PyTorch from the shell. Tensors live in the torchd daemon; handles (tensor://…) flow",
             "through $(…), pipes and variables. Stdin fills the leftmost missing tensor slots.", "",
             "command groups (`torch GROUP` lists one):"]
    tops = sorted(g for g in table.groups if "." not in g)
    lines += ["  %-12s %s" % (g, GROUP_WORDS.get(g, "%d commands" % len(table.groups[g]))) for g in tops]
    lines += ["", "common commands:"]
    lines += _rows([(name, table.ops[name].summary if name in table.ops else GROUP_WORDS[name])
                    for name in COMMON if name in table.ops or name in GROUP_WORDS])
    lines += ["", "  torch ops [CATEGORY] [--search WORD]   list all %d ops and verbs" % len(table),
              "  torch OP --help (or -h)                signature, arguments, an example, PyTorch's docs",
              "  torch daemon status                    the daemon: pid, uptime, objects, memory",
              "  torch context ls|create|use|rm         remote daemons; `torch --context NAME OP …` runs one there",
              "",
              exit_status_line(),
              ""]
    return Text("\n".join(lines))


def op_help(op, width=80):
    """Usage lines, PyTorch's first paragraph, the signatures, then every argument's type and default, each
    wrapped to `width` (the caller's terminal, else 80; examples stay whole commands); an op's sections
    (SECTIONS) after its other arguments."""
    width = max(width, 40)
    usages = [op.usage_line(ov) for ov in op.overloads]
    lines = []
    for i, usage in enumerate(usages):
        lines += _wrap(("usage: torch " if i == 0 else "       torch ") + usage, width, 13, " [")
    lines.append("")
    if op.doc:
        lines += [cut for line in op.doc.split("\n") for cut in textwrap.wrap(line, width) or [""]] + [""]
    for ov in op.overloads:
        lines += _wrap("  " + ov.signature(op.display_name if op.verb else "torch." + op.name), width, 6, ", ")
    sections = SECTIONS.get(op.name, {})
    in_section = {name for names in sections.values() for name in names}
    arguments = _arguments(op)
    others = {n: a for n, a in arguments.items() if n not in in_section}
    lines += ["", "arguments:"] + _argument_lines(op, others, width)
    for title, names in sections.items():
        lines += ["", title + ":"] + _argument_lines(op, {n: arguments[n] for n in names if n in arguments}, width)
    for peer, (flag, values) in aliases.FLAG_ALIASES.get(op.name, {}).items():
        lines.append("  %-22s %-14s same as --%s%s" % ("--" + peer, "", flag, " negated" if values else ""))
    shown = list(op.examples)  # a verb's own, then the one generated from its row (PyTorch ops: only that)
    generated = examples.example(op)
    if generated and generated not in shown:
        shown.append(generated)
    if shown:
        # a command stays one line, however long: a triple-click copies it whole, and the tests read it so
        lines += ["", "example:" if len(shown) == 1 else "examples:"] + ["  " + e for e in shown]
    lines += ["", "category: %s" % op.category]
    if op.aliases:
        lines.append("aliases: %s" % ", ".join(op.aliases))
    return Text("\n".join(lines) + "\n")


def _argument_lines(op, arguments, width):
    """`  --name  type  where  (default)` and PyTorch's words for it (table/docargs.py) under it, wrapped."""
    lines = []
    for name, specs in arguments.items():
        types = " | ".join(dict.fromkeys(a.type_text or a.kind for a in specs))
        where = "flag" if all(a.keyword_only for a in specs) else "positional or flag"
        defaults = [None if a.default is MISSING else a.default for a in specs if not a.required]  # T?: None
        default = "  (default: %s)" % _default_text(defaults[0]) if defaults and len(specs) == len(defaults) else ""
        lines += _wrap("  %-22s %-14s %s%s" % ("--" + name, types, where, default), width, 41, "  (")
        if op.arg_docs.get(name):
            lines += textwrap.wrap(op.arg_docs[name], width, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return lines


def _wrap(line, width, indent, mark):
    """line cut where `mark` is and the line would pass `width`, the rest indented by `indent`: a usage before
    each ` [`, a signature after each `, `."""
    pieces = line.split(mark)
    out, current = [], pieces[0]
    for piece in pieces[1:]:
        if len(current) + len(mark) + len(piece) > width:
            out.append(current + mark.rstrip() if mark.endswith(" ") else current)
            current = " " * indent + (piece if mark.endswith(" ") else mark.lstrip() + piece)
        else:
            current += mark + piece
    return out + [current]


def _arguments(op):
    """name -> the ArgSpecs of that name across overloads (`other` is Tensor in one, Scalar in another)."""
    out = {}
    for ov in op.overloads:
        for a in ov.args:
            out.setdefault(a.name, []).append(a)
    return out


def _default_text(value):
    if value is None:
        return "None"
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, (bool, list)) else str(value)
