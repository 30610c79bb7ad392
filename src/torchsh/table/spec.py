"""Rows of the op table: OpSpec (one op or verb) -> Overload (one signature) -> ArgSpec (one argument).

Pure data and the one signature grammar both ops and verbs use: ATen's schema syntax
(`add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`), extended with a few
verb-only types (Handle, Module, Optimizer, Scheduler, Json, Path, Argv).
"""
import re
from dataclasses import dataclass, field

from torchsh.table.kinds import KINDS, VARIADIC_KINDS

MISSING = object()  # ArgSpec.default for a required argument


class UnsupportedType(ValueError):
    """The schema has an argument type the shell cannot express (Dimname, Stream, Storage…)."""


# Schema type (base, list?) -> argument kind, from the kind rows (table/kinds.py): `ScalarType` -> dtype
_SCALAR_TYPES = {t: k.name for k in KINDS.values() for t in k.aten}
_LIST_TYPES = {t: k.name for k in KINDS.values() for t in k.aten_list}


@dataclass
class ArgSpec:
    name: str                 # what users type as --name (PyTorch's word; ATen's `self` shows as `input`)
    kind: str                 # a row of table/kinds.py (KINDS), which knows how to read it
    default: object = MISSING  # MISSING when required; else the default as schema text or a Python value
    optional: bool = False    # `T?`: None is accepted
    keyword_only: bool = False  # after `*` in the schema: flag only
    type_text: str = ""       # the schema's own spelling, for help and docs

    @property
    def required(self):
        return self.default is MISSING and not self.optional

    def to_json(self):
        return {"name": self.name, "kind": self.kind, "type": self.type_text,
                "required": self.required, "keyword_only": self.keyword_only,
                "default": None if self.default is MISSING else _json_default(self.default)}


@dataclass
class Overload:
    args: tuple               # ArgSpec, in schema order
    returns: str = ""         # the schema's return text, e.g. "(Tensor values, Tensor indices)"
    name: str = ""            # ATen overload name ("Tensor", "dim"), "" for the default one

    def signature(self, op_name):
        ret = " -> %s" % self.returns if self.returns else ""
        return "%s(%s)%s" % (op_name, self.params_text(), ret)

    def params_text(self):
        """The arguments as the schema writes them: `Tensor input, *, Scalar alpha=1`."""
        parts, star = [], False
        for a in self.args:
            if a.keyword_only and not star:
                parts.append("*")
                star = True
            text = "%s %s" % (a.type_text, a.name)
            if a.default is not MISSING:
                text += "=%s" % (a.default if isinstance(a.default, str) else _json_default(a.default))
            parts.append(text)
        return ", ".join(parts)


@dataclass
class OpSpec:
    name: str                 # full name after `torch.`: add, linalg.qr, nn.functional.gelu; verbs: value, nn.save
    category: str
    summary: str              # one line
    overloads: list
    call: object = None       # the callable: a torch function, or a verb handler taking ctx first
    verb: bool = False        # hand-written: call(ctx, **kwargs)
    doc: str = ""             # first paragraph of PyTorch's docstring, or the verb's
    aliases: tuple = ()
    factory: bool = False     # makes a tensor from nothing: takes --requires_grad and the default device
    arg_docs: dict = field(default_factory=dict)  # argument name -> PyTorch's description (table/docargs.py)
    read_only: bool = False   # changes no object, file, setting or generator (a new object may come out):
                              # what `torch mcp --read_only` admits (call/policy.py). A PyTorch op is, unless it
                              # draws from the generator (from_torch.py); a verb says so (@verb(read_only=True))
    # -- verbs only -------------------------------------------------------------------------------
    lockfree: bool = False    # never takes the tensor lock (status, census, free, stop): own workers, answers
                              # behind any queue; its warnings are not recorded (catch_warnings is process-wide)
    block: bool = False       # a block form (`scope -- CMD`): returns an Exec, which only a caller that runs
                              # commands can carry out (the client, the fast bash function, torch.nu)
    repeatable: tuple = ()    # flags that may come more than once (`load --columns x --columns y`): a list
    group: bool = False       # a group word's listing (`torch nn`): made on demand, never in the table
    examples: tuple = ()      # runnable bash lines `--help` prints (tests/e2e/test_verb_examples.py runs each)
    replies: tuple = ()       # the replies besides output it may answer with (protocol.REPLIES; call/replies.py)
    # -- what `torch history` knows of a verb (history/ reads these; a test holds every logged verb to them) ----
    writes: tuple = ()        # what it changes in place: argument names (the objects given there), or state no
                              # argument holds (history/log.py UNNAMED_STATE: manual_seed's generator, backward's
                              # grads); a verb that writes, or makes a handle, is logged by `torch history`
    form: object = None       # its lines in `torch history --python`: form(entry, writer) -> [line], or None
                              # for a run it cannot write (history/forms.py holds the forms; verbs hand them in)
    no_form: str = ""         # why it has no form, or why its form gives None: what the script's refusal says
    # -- class-backed rows: one per torch.nn layer, torch.optim optimizer, lr_scheduler scheduler ----
    cls: type = None          # the class itself (torch.nn.Linear); its handle kind is class_kind
    class_kind: str = ""      # the handle kind the class makes: "nn", "optim" or "sched"
    words_only: bool = False  # reached by its words only (`nn linear`), never by a bare `linear`
    word_aliases: tuple = ()  # more dotted names that resolve to it (`nn.Linear`, `sched.cosine`)
    words_metavar: str = ""   # what its words after `--` are called in usage (sequential's LAYER)
    _flags: dict = field(default=None, init=False, repr=False, compare=False)

    def flags(self):
        """name -> ArgSpec over every overload (the first overload to use a name decides its kind).

        Computed once: rows are not changed after the table is built, and the parser asks per request.
        """
        if self._flags is None:
            out = {}
            for ov in self.overloads:
                for a in ov.args:
                    out.setdefault(a.name, a)
            self._flags = out
        return self._flags

    @property
    def display_name(self):
        """What users type: verbs' dotted names are sub-commands (`nn save`), ops keep theirs (`linalg.qr`)."""
        return self.name.replace(".", " ") if self.verb else self.name

    def usage(self):
        return "usage: torch %s" % self.usage_line()

    def usage_line(self, overload=None):
        ov = overload or self.overloads[0]
        parts = [self.display_name]
        for a in ov.args:
            if a.kind == "argv":
                parts.append("-- CMD ARGS…")
            elif a.keyword_only or not a.required:
                flag = "--%s" % a.name if a.kind == "bool" else "--%s %s" % (a.name, _metavar(a))
                parts.append(flag if a.required else "[%s]" % flag)  # a required flag is not optional
            else:
                parts.append(_metavar(a) + ("…" if a.kind in VARIADIC_KINDS else ""))
        return " ".join(parts)

    def to_json(self):
        return {"name": self.name, "category": self.category, "summary": self.summary,
                "aliases": list(self.aliases), "verb": self.verb, "replies": list(self.replies),
                "read_only": self.read_only,
                "signatures": [ov.signature(self.name) for ov in self.overloads],
                "overloads": [{"name": ov.name, "returns": ov.returns, "args": [a.to_json() for a in ov.args]}
                              for ov in self.overloads]}


def _metavar(a):
    row = KINDS.get(a.kind)
    return (row and row.metavar) or a.name.upper()


def _json_default(value):
    return value if isinstance(value, (int, float, str, bool, list, type(None))) else str(value)


# -- the schema grammar -------------------------------------------------------------------------
_ARG_RE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?P<alias>\([a-z!|*\->\s]+\))?(?P<list>\[\d*\])?(?P<opt>\?)?"
                     r"(?P<list2>\[\d*\])?\s+(?P<name>\w+)(?:=(?P<default>.+))?$")


def parse_schema(text, overload_names=True):
    """`name.overload(args) -> returns` -> (name, overload, [ArgSpec], returns).

    Raises UnsupportedType for types the shell cannot express, and ValueError for mutable
    (`Tensor(a!)`) arguments: out= and in-place variants are not part of the shell surface.
    """
    name, _, rest = text.partition("(")
    close = _closing_paren(rest)   # the arrow inside `Tensor(a -> *)` is not the return arrow
    arg_text, returns = rest[:close], rest[close + 1:].strip()
    returns = returns[2:] if returns.startswith("->") else returns
    full_name, _, overload = name.partition(".") if overload_names else (name, "", "")
    args, kw = [], False
    for raw in split_top_level(arg_text):
        raw = raw.strip()
        if raw == "*":
            kw = True
            continue
        args.append(_parse_arg(raw, kw))
    return full_name, overload, args, returns.strip()


def _parse_arg(raw, keyword_only):
    m = _ARG_RE.match(raw)
    if not m:
        raise UnsupportedType("cannot read argument %r" % raw)
    if m.group("alias") and "!" in m.group("alias"):
        raise ValueError("mutable argument %r" % raw)
    base, is_list = m.group("type"), bool(m.group("list") or m.group("list2"))
    optional = bool(m.group("opt"))
    kind = (_LIST_TYPES if is_list else _SCALAR_TYPES).get(base)
    if kind is None:
        raise UnsupportedType("type %s%s" % (base, "[]" if is_list else ""))
    name = m.group("name")
    default = m.group("default")
    type_text = base + ("[]" if is_list else "") + ("?" if optional else "")
    return ArgSpec(name="input" if name == "self" else name, kind=kind,
                   default=MISSING if default is None else _read_default(default),
                   optional=optional, keyword_only=keyword_only, type_text=type_text)


def _read_default(text):
    text = text.strip()
    if text in ("None",):
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith("[") or re.match(r"^-?\d", text):
        try:
            import json
            return json.loads(text.replace("(", "[").replace(")", "]"))
        except ValueError:
            return text
    return text.strip("\"'")


def _closing_paren(text):
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return i
            depth -= 1
    raise ValueError("unbalanced parentheses in schema")


def split_top_level(text):
    """Split at commas outside brackets: 'int[2] a, float b=[1, 2]' -> two parts. Pure."""
    depth, start, out = 0, 0, []
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        out.append(text[start:])
    return out
