"""Usage lines, `torch OP --help`, the overview, and `torch ops` listings, all rendered from table rows."""
import json

from torchsh.cli.render import Text
from torchsh.table import aliases
from torchsh.table.spec import VARIADIC_KINDS
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
        defaults = [a.default for a in specs if not a.required]
        default = "  (default: %s)" % _default_text(defaults[0]) if defaults and len(specs) == len(defaults) else ""
        lines.append("  %-22s %-14s %s%s" % ("--" + name, types, where, default))
    for peer, (flag, values) in aliases.FLAG_ALIASES.get(op.name, {}).items():
        lines.append("  %-22s %-14s same as --%s%s" % ("--" + peer, "", flag, " negated" if values else ""))
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


def misfit(op, positionals, flags):
    """Say which argument no overload can read ("k wants int, got a handle tensor://…"), or None
    when every word fits some overload (then the problem is a missing or extra argument)."""
    from torchsh.cli import bind
    for name, tok in flags.items():
        specs = [a for ov in op.overloads for a in ov.args if a.name == name]
        if specs and not isinstance(tok, list) and all(bind._fit(a, tok) == 0 for a in specs):
            return "--%s wants %s, got %s" % (name, _types(specs), _what(tok))
    slots = [[a for a in ov.args if not a.keyword_only and a.name not in flags] for ov in op.overloads]
    most = max((len(s) for s in slots if not any(a.kind in VARIADIC_KINDS for a in s)), default=None)
    if most is not None and len(slots) == len([s for s in slots if not any(a.kind in VARIADIC_KINDS
                                                                           for a in s)]) \
            and len(positionals) > most:
        return "too many arguments: takes at most %d positional, got %d" % (most, len(positionals))
    for i, tok in enumerate(positionals):
        specs = [s[i] for s in slots if i < len(s) and s[i].kind not in VARIADIC_KINDS]
        if specs and len(specs) == len(slots) and all(bind._fit(a, tok) == 0 for a in specs):
            return "%s wants %s, got %s" % (specs[0].name, _types(specs), _what(tok))
    return None


def _types(specs):
    return " or ".join(dict.fromkeys((a.type_text or a.kind).replace("SymInt", "int") for a in specs))


def _what(tok):
    kinds = {"handle": "a handle", "int": "the number", "float": "the number", "bool": "the boolean",
             "list": "the list", "str": "the text", "null": ""}
    text = tok.text if len(tok.text) <= 80 else "%s… (%d characters)" % (tok.text[:60], len(tok.text))
    return ("%s %s" % (kinds.get(tok.cls, tok.cls), text)).strip()


def ops_table(ops):
    width = max((len(op.name) for op in ops), default=10)
    rows = ["%-*s  %-10s  %s" % (width, op.name, op.category, op.summary) for op in sorted(ops, key=lambda o: o.name)]
    return Text("\n".join(rows) + ("\n" if rows else ""))


def categories():
    return CATEGORIES + VERB_CATEGORIES
