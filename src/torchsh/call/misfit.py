"""Why the words fit no overload, said as one line: which argument cannot read which word, too many
words, a missing argument, or no signature at all. Pure (reads the op's rows and the binder's fit)."""
from torchsh.call import bind
from torchsh.errors import TorchshError
from torchsh.table.kinds import STDIN_KINDS, VARIADIC_KINDS
from torchsh.text import suggest


def no_binding(op, partials, positionals, flags=None):
    never = never_a_handle(op, positionals)
    if never is not None:
        return never
    problem = misfit(op, positionals, flags or {})  # `k wants an int, got a handle …`
    if problem:
        sigs = " | ".join(op.usage_line(ov) for ov in op.overloads[:4])
        close = _close_value(op, positionals, flags or {})  # `flaot32`: did you mean float32?
        return TorchshError("bad_argument", problem, "%susage: torch %s" % (close + " " if close else "", sigs))
    if partials:
        best = max(partials, key=lambda b: b.score)
        names = ", ".join(a.name for a in best.missing)
        return TorchshError("missing_argument", "missing %s" % names, op.usage())
    got = " ".join(repr(t) for t in positionals) or "nothing"
    if len(op.overloads) > 1:
        sigs = " | ".join(op.usage_line(ov) for ov in op.overloads[:4])
        return TorchshError("usage", "arguments (%s) fit no signature" % got, "usage: torch " + sigs)
    return TorchshError("usage", "arguments (%s) do not fit" % got, op.usage())


def never_a_handle(op, positionals):
    """bad_handle for a bare word where every overload wants a handle (`torch forward m x`: a `$` forgotten),
    or None. A word that fits some overload's slot there (einsum's equation) is no such word."""
    for i, tok in enumerate(positionals):
        if tok.cls != "str" or tok.text.lstrip()[:1] in "[{":  # JSON that did not parse: misfit says why
            continue
        slots = [s for s in (_slot(ov, i) for ov in op.overloads) if s is not None]
        if slots and all(a.kind in STDIN_KINDS for a in slots):
            shell_var = tok.text.isidentifier()
            return TorchshError("bad_handle", "%r is not a handle (%s wants %s)" % (tok.text[:60], slots[0].name,
                                                                                  _types(slots)),
                                "%shandles look like tensor://…, printed by the command that made the object"
                                % ("use $%s if %s is a shell variable; " % (tok.text, tok.text) if shell_var else ""))
    return None


def _slot(overload, i):
    """The argument the i-th positional word goes to in this overload (a variadic last one takes the rest)."""
    slots = [a for a in overload.args if not a.keyword_only]
    if i < len(slots):
        return slots[i]
    return slots[-1] if slots and slots[-1].kind in VARIADIC_KINDS else None


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


def _close_value(op, positionals, flags):
    """"did you mean float32?" for the first word a dtype or device slot of the op could have meant, or None."""
    kinds = {a.kind for ov in op.overloads for a in ov.args}
    words = list(flags.values()) + list(positionals)
    for tok in words:
        for kind in ("dtype", "device"):
            if kind in kinds and not isinstance(tok, list) and tok.cls == "str":
                close = suggest.value(kind, tok.value)
                if close:
                    return close
    return None


def _types(specs):
    return " or ".join(dict.fromkeys((a.type_text or a.kind).replace("SymInt", "int") for a in specs))


def _what(tok):
    kinds = {"handle": "a handle", "int": "the number", "float": "the number", "bool": "the boolean",
             "list": "the list", "str": "the text", "null": ""}
    text = tok.text if len(tok.text) <= 80 else "%s… (%d characters)" % (tok.text[:60], len(tok.text))
    return ("%s %s" % (kinds.get(tok.cls, tok.cls), text)).strip()
