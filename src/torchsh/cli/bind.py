"""Choose an overload and bind tokens to its arguments, as PyTorch's argument parser does. Pure.

The stdin prefix rule lives here: when no overload is complete, the leftmost missing tensor slots
are filled from stdin (one handle per line), i.e. stdin lines go in front of the positionals, so
`torch forward $m $x | torch mse_loss $y` is mse_loss(prediction, y).
"""
from dataclasses import dataclass

from torchsh.cli import kinds, tokens
from torchsh.cli.tokens import Token
from torchsh.table.spec import VARIADIC_KINDS

STDIN_TENSOR_KINDS = ("tensor", "tensors", "handle", "handles", "module", "modules", "optimizer", "scheduler")
STDIN_TEXT_KINDS = ("json",)   # `echo '[1,2]' | torch tensor`: all of stdin is one value
ALL = -1


@dataclass
class Binding:
    overload: object
    values: dict          # arg name -> Token, or list of Tokens for variadic kinds
    score: int
    missing: list         # required ArgSpecs not given

    @property
    def complete(self):
        return not self.missing

    def stdin_need(self):
        """How many stdin lines would complete this binding: N, ALL, or None if stdin cannot help."""
        need = 0
        for a in self.missing:
            if a.kind in STDIN_TEXT_KINDS or a.kind in VARIADIC_KINDS:
                return ALL if a.kind in STDIN_TENSOR_KINDS + STDIN_TEXT_KINDS else None
            if a.kind not in STDIN_TENSOR_KINDS:
                return None
            need += 1
        return need


def bind(overload, positionals, flags):
    args = overload.args
    names = {a.name: a for a in args}
    if any(f not in names for f in flags):
        return None
    values, total = {}, 0
    for name, tok in flags.items():
        s = _fit(names[name], tok)
        if s == 0:
            return None
        values[name], total = tok, total + s
    pending = list(positionals)
    for a in args:
        if a.keyword_only or a.name in flags or not pending:
            continue
        if a.kind in VARIADIC_KINDS:
            take = []
            while pending and (a.kind == "argv" or _fit_item(a.kind, pending[0]) == 3):
                take.append(pending.pop(0))
            if take:
                values[a.name] = take
                total += 3 * len(take)
            continue
        s = _fit(a, pending[0])
        if s == 0:
            return None
        values[a.name] = pending.pop(0)
        total += s
    if pending:
        return None
    missing = [a for a in args if a.required and a.name not in values]
    return Binding(overload, values, total, missing)


def _fit(arg, tok):
    if isinstance(tok, list):  # a list flag (`--inputs A B`): every item must fit
        return min((_fit_item(arg.kind, t) for t in tok), default=0)
    if tok.cls == "null" and (arg.optional or arg.default is None):
        return 3
    return kinds.score(arg.kind, tok)


def _fit_item(kind, tok):
    item = {"tensors": "tensor", "handles": "handle", "modules": "module"}.get(kind, kind)
    return kinds.score(item, tok)


def choose(op, positionals, flags):
    """Return the best complete Binding, or (None, partial bindings) so the caller can use stdin."""
    found = [b for b in (bind(ov, positionals, flags) for ov in op.overloads) if b is not None]
    complete = [b for b in found if b.complete]
    if complete:
        return max(complete, key=lambda b: b.score), found
    return None, found


def stdin_need(partials):
    """The fewest stdin lines that would complete some overload; None if none can be completed."""
    needs = [n for n in (b.stdin_need() for b in partials) if n is not None]
    if not needs:
        return None
    finite = [n for n in needs if n != ALL]
    return min(finite) if finite else ALL


def with_stdin(lines, positionals, partials):
    """Tokens for stdin lines, put in front of the positionals (or as one text value)."""
    if any(a.kind in STDIN_TEXT_KINDS for b in partials for a in b.missing):
        return [Token("str", "\n".join(lines), "<stdin>")] + positionals
    return [tokens.from_word(line) for line in lines if line.strip()] + positionals
