"""A typed torch.nu command's parameters: each argument's flag over the op's overloads, its nu type,
its TAB completer, and the comment `help torch OP` shows (PyTorch's description, the schema's types
and the default).

Defaults are told in the comment, not declared: a flag not given is null and left out, so the daemon
applies the default and chooses the overload as for the bash command line (and nu, which parses
every typed command at `use`, has less to parse).
"""
import re

from torchsh.quoting import nu_comment, nu_string
from torchsh.shells.complete import NAMED_VALUES
from torchsh.table.aliases import FLAG_ALIASES
from torchsh.table.kinds import KINDS, LIST_FLAG_KINDS, STDIN_KINDS
from torchsh.table.spec import MISSING

# TAB: a flag's completer by its kind's source (table/kinds.py ArgKind.complete). Dtypes and devices come
# from lists in the module (no request); handles of the flag's kind, layouts, memory formats and named
# values (--loss, --metrics, --autocast) from the daemon, which reads the command being typed.
STATIC_COMPLETERS = {"dtypes": "nu-complete torch dtypes", "devices": "nu-complete torch devices"}
ASKED_SOURCES = ("handles", "layouts", "memory_formats")
ASKED = "nu-complete torch"
# PyTorch's description of an argument: its first sentence, cut at this length (nu reads every
# comment at `use` too, and `help` shows one line per flag).
DOC_CHARS = 100
_SENTENCE_END = re.compile(r"(?<=[.;])\s+(?=[A-Z(])")
_HANDLE_KINDS = set(STDIN_KINDS)  # tensor, tensors, handle(s), module(s), optimizer, scheduler


def merged_flags(op):
    """Each argument name over every overload: its kinds, schema types, nu type (None: a switch), and
    its default as a nu literal when all overloads agree on one."""
    merged = {}
    for ov in op.overloads:
        for a in ov.args:
            f = merged.setdefault(a.name, {"name": a.name, "kinds": set(), "types": [], "defaults": [],
                                           "keyword_only": False})
            f["kinds"].add(a.kind)
            f["keyword_only"] = f["keyword_only"] or a.keyword_only
            if a.type_text not in f["types"]:
                f["types"].append(a.type_text)
            f["defaults"].append(a.default)
    for f in merged.values():
        kinds, defaults = f["kinds"], f["defaults"]
        switch = kinds == {"bool"} and all(d in (False, None, MISSING) for d in defaults)  # given means true
        one_type = KINDS[next(iter(kinds))].nu_type if len(kinds) == 1 else None
        f["nu_type"] = None if switch else one_type or "any"  # a bool that defaults to true: a value flag
        agreed = all(d is defaults[0] or d == defaults[0] for d in defaults) and defaults[0] not in (MISSING, None)
        f["nu_default"] = _nu_literal(defaults[0]) if agreed and not switch else None
    return list(merged.values())


def peer_flags(op, flags):
    """The other spellings of the op's flags (table/aliases.FLAG_ALIASES: `dist sample --shape`), each typed
    as the flag it stands for; the daemon renames it (call/parse.py), so nu keeps what bash accepts."""
    by_name = {f["name"]: f for f in flags}
    peers = FLAG_ALIASES.get(op.name, {}).items()
    return [dict(by_name[flag], name=peer, peer_of=flag + (" negated" if values else ""))
            for peer, (flag, values) in peers if flag in by_name and peer not in by_name]


def positional_only(f):
    """A handle argument every overload requires positionally: given as a word or piped, not by name."""
    return f["kinds"] <= _HANDLE_KINDS and all(d is MISSING for d in f["defaults"]) and not f["keyword_only"]


def flag_decl(f, op):
    """`--name: type@completer  # PyTorch's description (schema types; default …)`."""
    if f["nu_type"] is None:
        decl = "--%s" % f["name"]
    else:
        completer = _completer(f)
        decl = "--%s: %s%s" % (f["name"], f["nu_type"], "@" + nu_string(completer) if completer else "")
    if f.get("peer_of"):
        return "%s  # same as --%s" % (decl, f["peer_of"])
    about = " | ".join(t for t in f["types"] if t) or "switch"
    if f["nu_default"]:
        about += "; default %s" % f["nu_default"]
    doc = arg_doc(op, f["name"])
    return "%s  # %s" % (decl, nu_comment("%s (%s)" % (doc, about) if doc else about))


def positional_help(op):
    """The `...args` comment: each overload's positional words, and the descriptions of the handles
    taken by position only (they have no flag to carry theirs)."""
    forms = []
    for ov in op.overloads:
        words = [a.name + ("…" if a.kind in LIST_FLAG_KINDS else "")
                 for a in ov.args if not a.keyword_only and a.kind != "argv"]
        text = " ".join(words) or "(none)"
        if text not in forms:
            forms.append(text)
    docs = ["%s: %s; " % (f["name"], arg_doc(op, f["name"])) for f in merged_flags(op)
            if positional_only(f) and arg_doc(op, f["name"])]
    return "positional: %s; %spiped handles fill the tensor slots still missing" % (" | ".join(forms), "".join(docs))


def arg_doc(op, name):
    """PyTorch's description of an argument (table/docargs.py), compact: its first sentence, at most DOC_CHARS."""
    text = _SENTENCE_END.split(" ".join(op.arg_docs.get(name, "").split()), 1)[0].rstrip(".")
    return text if len(text) <= DOC_CHARS else text[:DOC_CHARS - 1].rstrip() + "…"


def _completer(f):
    if f["name"] in NAMED_VALUES:
        return ASKED
    sources = {KINDS[k].complete for k in f["kinds"]}
    if len(sources) == 1 and next(iter(sources)) in STATIC_COMPLETERS:
        return STATIC_COMPLETERS[next(iter(sources))]
    return ASKED if sources & set(ASKED_SOURCES) else None


def _nu_literal(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return None
        return "inf" if value == float("inf") else "-inf" if value == float("-inf") else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return nu_string(value)
    if isinstance(value, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return "[%s]" % ", ".join(_nu_literal(x) for x in value)
    return None
