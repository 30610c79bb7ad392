"""JSON calls remembered: per op and shape of a body's words, the slot each word fills.

`POST /v1/ops/add {"tensors": [a, b]}` sent ten thousand times with new handles binds the same way every
time: the overload and each word's slot depend on the words' shapes (a JSON type, a handle's kind, a short
text itself: what overload choice reads, bind._shape), never on their values. The first call of a shape
takes the full path (tokens, overload choice, stdin rule) and leaves its plan here; later calls of that
shape convert each word straight into its slot, ~8 µs less per request. A word no plan can carry (a list, an
object, a long text, `-`) keeps the full path every time; so does a body with fields beyond
tensors/args/kwargs/env/cwd.
"""
from torchsh.call.tokens import Token, from_json
from torchsh.registry.handles import looks_like_handle
from torchsh.table import kinds
from torchsh.table.values import NumberList

_HELD = {"ha": "oa", "ht": "ot"}
PLAIN_FIELDS = frozenset(("tensors", "args", "kwargs", "env", "cwd"))
_PLANS = {}         # shape key -> Plan
_PLANS_LIMIT = 4096  # bounded; cleared whole when full (as bind's plans)


class Plan:
    """Where each argument's word comes from: ("a", i) args[i], ("t", j) tensors[j] ("ha", "ht": a handle
    there; "oa", "ot": a handle in a slot of one handle kind, the slot's `kind` then being that handle
    kind), ("k", name) kwargs, ("c", token) a word the op's name fixed (an alias's flag); a variadic slot
    has a tuple of those."""
    __slots__ = ("op", "overload", "slots")

    def __init__(self, op, overload, slots):
        self.op, self.overload, self.slots = op, overload, slots


class PlannedCall:
    """One request's words under a plan: what invoke() converts under the tensor lock (convert())."""
    __slots__ = ("overload", "plan", "args", "tensors", "kwargs")

    def __init__(self, plan, args, tensors, kwargs):
        self.overload, self.plan, self.args, self.tensors, self.kwargs = plan.overload, plan, args, tensors, kwargs


def word_token(value):
    # A string's own text names it in error messages, as on the command line (and skips a json.dumps); so does
    # a big body's array of numbers (api/bigbody.py: writing the JSON of 5M numbers again took 3 s).
    return from_json(value, value if isinstance(value, str) else value.text if type(value) is NumberList else None)


def key(name, args, tensors, kwargs, kind_of):
    """The shape of a body's words, or None when one of them is not remembered. kind_of(text): the kind
    of the object a held handle names, else None (Registry.kind_of): most words are such handles."""
    shapes = [name, len(args)]
    for v in args:
        s = _shape(v, kind_of)
        if s is None:
            return None
        shapes.append(s)
    for v in tensors:
        s = _shape(v, kind_of)
        if s is None:
            return None
        shapes.append(s)
    for k, v in kwargs.items():
        s = _shape(v, kind_of)
        if s is None:
            return None
        shapes.append((k, s))
    return tuple(shapes)


def _shape(value, kind_of):
    kind = type(value)
    if kind is str:
        if value == "-" or len(value) > 64:  # `-` moves a tensor (api/ops._put_dashes); long texts: not worth it
            return None
        held = kind_of(value)
        if held is not None:  # a held handle's prefix is its kind: what the test below would find, quicker
            return held + "://"
        if "://" in value and looks_like_handle(value):
            return value.partition("://")[0] + "://"
        return ("str", value)
    if kind is int:
        return "int01" if value in (0, 1) else "int"
    if kind is float or kind is bool or value is None:
        return kind
    return None  # a list or an object: their items' shapes count too


def plan_for(shape_key, op):
    plan = _PLANS.get(shape_key)
    return plan if plan is not None and plan.op is op else None


def remember(shape_key, op, binding, positionals, piped, flags, fixed):
    """Keep the plan of a complete binding made from these tokens (positionals from args, piped from
    tensors, flags from kwargs and, named in `fixed`, the op name's own); nothing when a value is no word."""
    where = {id(t): ("a" if t.cls != "handle" else "ha", i) for i, t in enumerate(positionals)}
    where.update((id(t), ("t" if t.cls != "handle" else "ht", j)) for j, t in enumerate(piped))
    where.update((id(t), ("c", t) if name in fixed else ("k", name)) for name, t in flags.items()
                 if not isinstance(t, list))
    slots = []
    for a in binding.overload.args:  # convert_all's order: the call's keyword order follows it
        if a.name not in binding.values:
            continue
        v = binding.values[a.name]
        item = kinds.KINDS[a.kind].item
        if isinstance(v, list) and item:
            sources = tuple(where.get(id(t)) for t in v)
            if None in sources:
                return
            slots.append((a.name, item, sources))
        elif isinstance(v, list) or a.kind == "argv" or id(v) not in where:
            return
        elif where[id(v)][0] in _HELD and kinds.KINDS[a.kind].handle and not kinds.KINDS[a.kind].variadic:
            # a handle in a slot of one handle kind is the object it names: looked up, no token made
            source, at = where[id(v)]
            slots.append((a.name, kinds.KINDS[a.kind].handle, (_HELD[source], at)))
        else:
            slots.append((a.name, a.kind, where[id(v)]))
    if len(_PLANS) >= _PLANS_LIMIT:
        _PLANS.clear()
    _PLANS[shape_key] = Plan(op, binding.overload, tuple(slots))


def convert(ctx, call):
    """invoke()'s conversion for a PlannedCall: each word through its slot's kind, as convert_all does."""
    out, get = {}, ctx.registry.get
    for name, kind, source in call.plan.slots:
        if source[0] == "oa":
            out[name] = get(call.args[source[1]], kind)  # kind: the slot's handle kind (remember)
        elif source[0] == "ot":
            out[name] = get(call.tensors[source[1]], kind)
        elif type(source[0]) is tuple:
            out[name] = [kinds.convert(kind, _word(call, s), ctx) for s in source]
        else:
            out[name] = kinds.convert(kind, _word(call, source), ctx)
    return out


def _word(call, source):
    where, at = source
    if where == "ht":  # a handle (the shape says so): its token without classifying it again
        text = call.tensors[at]
        return Token("handle", text.strip(), text)
    if where == "ha":
        text = call.args[at]
        return Token("handle", text.strip(), text)
    if where == "t":
        return word_token(call.tensors[at])
    if where == "a":
        return word_token(call.args[at])
    if where == "k":
        return word_token(call.kwargs[at])
    return at  # "c": the fixed token itself
