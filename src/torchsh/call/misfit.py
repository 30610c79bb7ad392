"""Why the words fit no overload, said as one line: which argument cannot read which word, too many
words, a missing argument, or no signature at all. Pure (reads the op's rows and the binder's fit)."""
from torchsh.call import bind
from torchsh.errors import TorchshError
from torchsh.table.kinds import VARIADIC_KINDS


def no_binding(op, partials, positionals, flags=None):
    problem = misfit(op, positionals, flags or {})  # `k wants an int, got a handle …`
    if problem:
        sigs = " | ".join(op.usage_line(ov) for ov in op.overloads[:4])
        return TorchshError("bad_argument", problem, "usage: torch " + sigs)
    if partials:
        best = max(partials, key=lambda b: b.score)
        names = ", ".join(a.name for a in best.missing)
        return TorchshError("missing_argument", "missing %s" % names, op.usage())
    got = " ".join(repr(t) for t in positionals) or "nothing"
    if len(op.overloads) > 1:
        sigs = " | ".join(op.usage_line(ov) for ov in op.overloads[:4])
        return TorchshError("usage", "arguments (%s) fit no signature" % got, "usage: torch " + sigs)
    return TorchshError("usage", "arguments (%s) do not fit" % got, op.usage())


def misfit(op, positionals, flags):
    """Say which argument no overload can read ("k wants int, got a handle tensor://…"), or None
    when every word fits some overload (then the problem is a missing or extra argument)."""
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
