"""Choose an overload and bind tokens to its arguments, as PyTorch's argument parser does. Pure.

The stdin rule lives here. Given arguments bind by kind first; stdin (the client's stdin lines, or
the JSON API's `tensors`) then fills the tensor slots they left open, leftmost first. So
`torch forward $m $x | torch mse_loss $y` is mse_loss(prediction, y), `echo $t | torch reshape
'[2,3]'` reshapes $t (a shape never takes a tensor slot while the shape slot waits for it), and
`echo $x | torch forward $m` runs $m on $x (a module handle fits the model slot, not the inputs).
`-` marks the spot explicitly; parse.py and run.py put the stdin handles there before binding.
"""
from dataclasses import dataclass

import torch

from torchsh.table import kinds
from torchsh.call.tokens import Token
from torchsh.table.kinds import KINDS, STDIN_TEXT_KINDS, VARIADIC_KINDS

ALL = -1


@dataclass
class Binding:
    overload: object
    values: dict          # arg name -> Token, or list of Tokens for variadic kinds
    score: int            # how well the given words fit their slots (kinds.score summed)
    missing: list         # required ArgSpecs not given (and not left open for stdin)
    holes: tuple = ()     # required tensor-like ArgSpecs left open for stdin, in schema order

    @property
    def complete(self):
        return not self.missing and not self.holes

    def need(self):
        """How many stdin lines fill the holes: N, or ALL when a hole takes a list or a text."""
        if any(a.kind in VARIADIC_KINDS or a.kind in STDIN_TEXT_KINDS for a in self.holes):
            return ALL
        return len(self.holes)

    def fill(self, toks, text=None):
        """This binding with its holes filled from stdin tokens in order (a variadic hole takes what the
        holes after it leave; `text`, when given, is all of stdin for a JSON hole), or None if they don't fit."""
        values, score, rest = dict(self.values), self.score, list(toks)
        for i, a in enumerate(self.holes):
            if a.kind in STDIN_TEXT_KINDS and text is not None:
                values[a.name], score, rest = Token("str", text, "<stdin>"), score + 2, []
            elif a.kind in VARIADIC_KINDS:
                n = len(rest) - len(self.holes[i + 1:])
                fits = [_fit_item(a.kind, t) for t in rest[:max(n, 0)]]
                if n < 1 or min(fits) == 0:
                    return None
                values[a.name] = rest[:n] + values.get(a.name, [])  # stdin first, then given handles
                score, rest = score + sum(fits), rest[n:]
            else:
                s = _fit(a, rest[0]) if rest else 0
                if s == 0:
                    return None
                values[a.name], score = rest.pop(0), score + s
        if rest:
            return None
        return Binding(self.overload, values, score, self.missing)


def bind(overload, positionals, flags):
    """The binding of these words alone (no stdin), or None when they fit no way."""
    found = _bindings(overload, positionals, flags, holes_ok=False)
    return found[0] if found else None


def _bindings(overload, positionals, flags, holes_ok, varargs=False):
    """Every way the words bind to this overload, in order; with holes_ok, required tensor-like slots
    may also be left open for stdin (each such slot is tried open first, so leftmost holes come first)."""
    args = overload.args
    names = {a.name: a for a in args}
    if any(f not in names for f in flags):
        return []
    base, total = {}, 0
    for name, tok in flags.items():
        s = _fit(names[name], tok)
        if s == 0:
            return []
        base[name], total = tok, total + s
    slots = [a for a in args if not a.keyword_only and a.name not in flags]
    sizes = varargs and _varargs_slot(slots)
    out = []

    def walk(k, pending, values, score, holes):
        if k == len(slots) or (not pending and not holes_ok):
            if not pending:
                missing = [a for a in args if a.required and a.name not in values and a not in holes]
                out.append(Binding(overload, values, score, missing, tuple(holes)))
            return
        a = slots[k]
        open_ = [holes + [a]] if holes_ok and a.required and KINDS[a.kind].stdin else []
        if a.kind in VARIADIC_KINDS:
            take = _take_items(a.kind, pending)
            got = dict(values, **{a.name: take}) if take else values
            for h in open_ + [holes]:
                walk(k + 1, pending[len(take):], got, score + 3 * len(take), h)
            return
        for h in open_:
            walk(k + 1, pending, values, score, h)
        if not pending:
            walk(k + 1, pending, values, score, holes)
        elif a is sizes and len(pending) > 1 and all(t.cls == "int" for t in pending):
            # `torch zeros 2 3`, `torch reshape $t 2 3`: the sizes as varargs, as PyTorch reads them
            words = [t.value for t in pending]
            walk(k + 1, [], dict(values, **{a.name: Token("list", words, " ".join(t.text for t in pending))}),
                 score + 3 * len(words), holes)
        else:
            s = _fit(a, pending[0])
            if s:
                walk(k + 1, pending[1:], dict(values, **{a.name: pending[0]}), score + s, holes)

    walk(0, list(positionals), base, total, [])
    return out


def _take_items(kind, pending):
    """The leading words that are items of a variadic slot (all the words for argv)."""
    n = 0
    while n < len(pending) and (kind == "argv" or _fit_item(kind, pending[n]) == 3):
        n += 1
    return pending[:n]


def _varargs_slot(slots):
    """The size slot that takes its sizes as separate words, where PyTorch does: the only positional
    argument is a required int list (torch.zeros(2, 3)), or the only one after self (Tensor.reshape(2, 3))."""
    rest = slots[1:] if slots and slots[0].kind == "tensor" and slots[0].name == "input" else slots
    return rest[0] if len(rest) == 1 and rest[0].kind == "int_list" and rest[0].required else None


def _fit(arg, tok):
    if isinstance(tok, list):  # a list flag (`--inputs A B`): every item must fit
        return min((_fit_item(arg.kind, t) for t in tok), default=0)
    if tok.cls == "null" and (arg.optional or arg.default is None):
        return 3
    return _kind_fit(arg.kind, tok)


def _fit_item(kind, tok):
    return _kind_fit(KINDS[kind].item or kind, tok)


def _kind_fit(kind, tok):
    """kinds.score, but a handle of another kind (nn:// in a tensor slot) fits only as a last resort,
    so it never takes a slot that a later word fits better; converting it still names the mix-up."""
    s = kinds.score(kind, tok)
    want = KINDS[kind].handle
    if s and want and tok.cls == "handle" and tok.value.partition("://")[0] != want:
        return 1
    return s


def _takes_varargs(op):
    """Sizes as varargs: factories by their Python signature, ops with a Tensor method of the same
    name by the method's (torch.reshape(t, 2, 3) is refused, t.reshape(2, 3) is not)."""
    return not op.verb and (op.factory or hasattr(torch.Tensor, op.name))


def choose(op, positionals, flags):
    """Return the best complete Binding of the words alone, or (None, partial bindings)."""
    varargs = _takes_varargs(op)
    found = [b for ov in op.overloads for b in _bindings(ov, positionals, flags, False, varargs)[:1]]
    complete = [b for b in found if b.complete]
    if complete:
        return max(complete, key=lambda b: b.score), found
    return None, found


# The choice depends on the words' kinds, not their values: (id(op), the words' shapes) -> (op, overload,
# score, missing, where each slot's word comes from). Bounded; cleared whole when full.
_PLANS = {}
_PLANS_LIMIT = 4096
_UNCACHEABLE = object()


def best(op, positionals, flags):
    """choose()'s complete binding, or None; remembered per op and shape of the words (their classes,
    handle kinds, short texts, flag names): what the scores read, never the values they pass on."""
    key = _plan_key(op, positionals, flags)
    plan = _PLANS.get(key) if key is not None else None
    if plan is None or plan[0] is not op:
        binding = choose(op, positionals, flags)[0]
        if key is not None and binding is not None:
            if len(_PLANS) >= _PLANS_LIMIT:
                _PLANS.clear()
            _PLANS[key] = (op,) + _plan_of(binding, positionals, flags)
        return binding
    if plan[1] is _UNCACHEABLE:
        return choose(op, positionals, flags)[0]
    _, overload, score, missing, sources = plan
    values = {name: (flags[src] if isinstance(src, str) else
                     positionals[src] if isinstance(src, int) else [positionals[i] for i in src])
              for name, src in sources}
    return Binding(overload, values, score, list(missing))


def _shape(tok):
    """What the scores read of a word: its class, a handle's kind, whether an int could be a bool, a
    text itself (dtype names, devices, commas); None for a long text (not worth remembering)."""
    cls = tok.cls
    if cls == "handle":
        return tok.value.partition("://")[0] + "://"
    if cls == "int":
        return "int01" if tok.value in (0, 1) else cls
    if cls == "str":
        return ("str", tok.value) if len(tok.value) <= 64 else None
    return cls


def _plan_key(op, positionals, flags):
    shapes = []
    for tok in positionals:
        s = _shape(tok)
        if s is None:
            return None
        shapes.append(s)
    for name, tok in flags.items():
        s = tuple(_shape(t) for t in tok) if isinstance(tok, list) else _shape(tok)
        if s is None or (isinstance(s, tuple) and None in s):
            return None
        shapes.append((name, s))
    return id(op), tuple(shapes)


def _plan_of(binding, positionals, flags):
    """(overload, score, missing, (name, source) pairs): a source is a flag name, a word's index, or a
    tuple of indexes (a variadic slot); _UNCACHEABLE when a value is no given word (sizes as varargs)."""
    at = {id(t): i for i, t in enumerate(positionals)}
    sources = []
    for name, v in binding.values.items():
        if name in flags and v is flags[name]:
            sources.append((name, name))
        elif isinstance(v, list) and all(id(t) in at for t in v):
            sources.append((name, tuple(at[id(t)] for t in v)))
        elif not isinstance(v, list) and id(v) in at:
            sources.append((name, at[id(v)]))
        else:
            return _UNCACHEABLE, None, None, None
    return binding.overload, binding.score, tuple(binding.missing), tuple(sources)


def _open(op, positionals, flags):
    """Bindings that leave tensor slots open for stdin and lack nothing else, in overload order."""
    varargs = _takes_varargs(op)
    return [b for ov in op.overloads for b in _bindings(ov, positionals, flags, True, varargs)
            if b.holes and not b.missing]


def _leftmost(b):
    return [b.overload.args.index(a) for a in b.holes]


def stdin_choice(op, positionals, flags):
    """The binding stdin would complete: the words placed best by kind, then the fewest and
    leftmost open slots. None when stdin cannot help."""
    found = _open(op, positionals, flags)
    return min(found, key=lambda b: (-b.score, len(b.holes), _leftmost(b))) if found else None


def fill_stdin(op, positionals, flags, toks, text=None):
    """The best complete binding whose open slots take exactly these stdin tokens (or None)."""
    filled = [f for f in (b.fill(toks, text) for b in _open(op, positionals, flags)) if f is not None]
    return max(filled, key=lambda b: b.score) if filled else None
