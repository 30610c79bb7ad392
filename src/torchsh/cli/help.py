"""Usage lines, `torch OP --help` and the overview, all rendered from table rows."""
import json
import textwrap

from torchsh.cli import examples
from torchsh.call.results import Text
from torchsh.errors import exit_status_line
from torchsh.table import aliases
from torchsh.table.spec import MISSING
from torchsh.table.groups import GROUP_WORDS, listing_rows as _rows



# The commands a first session uses most, in the order it meets them
COMMON = ("tensor", "randn", "zeros", "value", "print", "shape", "add", "matmul", "sum", "reshape",
          "forward", "train_step", "backward", "step", "tensors", "free", "save", "load")


def overview(table):
    """`torch`, `torch help`, `torch -h`: the command groups, the commonest commands, where to look next."""
    lines = ["usage: torch OP [TENSOR…] [ARG…] [--flag VALUE…]", "",
             "PyTorch from the shell. Tensors live in the torchd daemon; handles (tensor://…) flow",
             "through $(…), pipes and variables. Stdin fills the leftmost missing tensor slots.", "",
             "command groups (`torch GROUP` lists one):"]
    tops = sorted(g for g in table.groups if "." not in g)
    lines += ["  %-12s %s" % (g, GROUP_WORDS.get(g, "%d commands" % len(table.groups[g]))) for g in tops]
    lines += ["", "common commands:"]
    lines += _rows([(name, table.ops[name].summary) for name in COMMON if name in table.ops])
    lines += ["", "  torch ops [CATEGORY] [--search WORD]   list all %d ops and verbs" % len(table),
              "  torch OP --help (or -h)                signature, arguments, an example, PyTorch's docs",
              "  torch daemon status                    the daemon: pid, uptime, objects, memory",
              "  torch context ls|create|use|rm         remote daemons; `torch --context NAME OP …` runs one there",
              "",
              exit_status_line(),
              ""]
    return Text("\n".join(lines))


def op_help(op):
    """Usage lines, PyTorch's first paragraph, the signatures, then every argument's type and default."""
    usages = [op.usage_line(ov) for ov in op.overloads]
    lines = ["usage: torch " + usages[0]] + ["       torch " + u for u in usages[1:]] + [""]
    if op.doc:
        lines += [op.doc, ""]
    lines += ["  " + ov.signature(op.display_name if op.verb else "torch." + op.name) for ov in op.overloads]
    lines += ["", "arguments:"]
    for name, specs in _arguments(op).items():
        types = " | ".join(dict.fromkeys(a.type_text or a.kind for a in specs))
        where = "flag" if all(a.keyword_only for a in specs) else "positional or flag"
        defaults = [None if a.default is MISSING else a.default for a in specs if not a.required]  # T?: None
        default = "  (default: %s)" % _default_text(defaults[0]) if defaults and len(specs) == len(defaults) else ""
        lines.append("  %-22s %-14s %s%s" % ("--" + name, types, where, default))
        if op.arg_docs.get(name):  # PyTorch's own words for it (table/docargs.py)
            lines += textwrap.wrap(op.arg_docs[name], 100, initial_indent=" " * 6, subsequent_indent=" " * 6)
    for peer, (flag, values) in aliases.FLAG_ALIASES.get(op.name, {}).items():
        lines.append("  %-22s %-14s same as --%s%s" % ("--" + peer, "", flag, " negated" if values else ""))
    shown = list(op.examples)  # a verb's own, then the one generated from its row (PyTorch ops: only that)
    generated = examples.example(op)
    if generated and generated not in shown:
        shown.append(generated)
    if shown:
        lines += ["", "example:" if len(shown) == 1 else "examples:"] + ["  " + e for e in shown]
    lines += ["", "category: %s" % op.category]
    if op.aliases:
        lines.append("aliases: %s" % ", ".join(op.aliases))
    return Text("\n".join(lines) + "\n")


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
