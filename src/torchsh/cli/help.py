"""Usage lines, `torch OP --help`, the overview, and `torch ops` listings, all rendered from table rows."""
import json
import textwrap

from torchsh.cli import examples
from torchsh.cli.render import Text
from torchsh.table import aliases
from torchsh.table.spec import MISSING, VARIADIC_KINDS
from torchsh.table.categories import CATEGORIES

VERB_CATEGORIES = ("tensors", "files", "autograd", "nn", "optim", "objects", "daemon", "shell")


# What each command group is, in a few words (the commands under it come from the table)
GROUP_WORDS = {
    "nn": "modules: `torch nn KIND ARGS` builds any torch.nn layer; save, load, sequential…",
    "nn.functional": "torch.nn.functional: activations, losses, convolutions, pooling…",
    "optim": "optimizers: `torch optim KIND MODEL` for every torch.optim class; lr, info",
    "sched": "learning-rate schedulers: `torch sched KIND OPT`; step, lr",
    "daemon": "the torchd daemon: status, start, stop, restart, ttl, log",
    "scope": "memory scopes: `torch scope -- CMD` frees what CMD made; begin, end",
    "checkpoint": "model + optimizer + scheduler state in one file: save, load",
    "linalg": "torch.linalg: solve, inv, qr, svd, eigh, norms…",
    "fft": "torch.fft: discrete Fourier transforms",
    "special": "torch.special: special functions (erf, gammaln, bessel…)",
}
# The commands a first session uses most, in the order it meets them
COMMON = ("tensor", "randn", "zeros", "value", "print", "shape", "add", "matmul", "sum", "reshape",
          "forward", "train_step", "backward", "step", "tensors", "free", "save", "load")
_KIND_WORDS = (("nn_class", "module kinds (torch.nn classes)"), ("optim_class", "optimizer kinds (torch.optim)"),
               ("sched_class", "scheduler kinds (torch.optim.lr_scheduler)"))


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
              "  torch daemon status                    the daemon: pid, uptime, objects, memory", "",
              "exit status: 0 ok, 1 internal error, 2 usage, 3 handle, 4 PyTorch refused, 5 daemon unavailable, 6 file",
              ""]
    return Text("\n".join(lines))


def group_help(table, group):
    """`torch GROUP`, `torch GROUP --help`: the group's commands, one line each, then its kinds and sub-groups."""
    spoken = group.replace(".", " ")
    lines = ["usage: torch %s COMMAND [ARG…]" % spoken, ""]
    if group in GROUP_WORDS:
        lines += ["%s" % GROUP_WORDS[group], ""]
    own = table.lookup(group)[0] if _resolvable(table, group) else None
    if own is not None:  # `torch scope -- CMD`, `torch fft TENSOR`: the group word runs an op itself
        lines += ["  torch %s" % own.usage_line().replace(own.display_name, spoken, 1), "      " + own.summary, ""]
    commands, kinds, subgroups = [], {}, []
    for word, op in sorted(table.members(group).items(), key=lambda kv: kv[0].lower()):
        if op is None or (word in table.groups and group + "." + word in table.groups):
            subgroups.append((word + " …", GROUP_WORDS.get(group + "." + word, "%d commands: `torch %s %s`"
                                                            % (len(table.groups[group + "." + word]), spoken, word))))
            continue
        label = next((text for key, text in _KIND_WORDS if key in op.extra), None)
        if label:
            kinds.setdefault(label, []).append((word, op.summary))
        else:
            commands.append((word, op.summary))
    if commands:
        lines += ["commands:"] + _rows(commands) + [""]
    for label, rows in kinds.items():
        lines += ["%s:" % label] + _rows(rows) + [""]
    if subgroups:
        lines += ["groups:"] + _rows(subgroups) + [""]
    lines.append("`torch %s COMMAND --help` shows one command's arguments and an example." % spoken)
    return Text("\n".join(lines) + "\n")


def _resolvable(table, name):
    try:
        table.lookup(name)
        return True
    except Exception:  # unknown or ambiguous: the group word is no op of its own
        return False


def _rows(pairs, width=78):
    """`  word   summary` lines, the summary cut to fit one terminal line."""
    col = min(max((len(w) for w, _ in pairs), default=0), 22)
    out = []
    for word, summary in pairs:
        text = summary if len(summary) <= width - col - 4 else summary[:width - col - 5].rstrip() + "…"
        out.append("  %-*s  %s" % (col, word, text))
    return out


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
    shown = examples.example(op)
    if shown:
        lines += ["", "example:", "  " + shown]
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
