"""One row per argument kind: how a word fits a slot of that kind, what it becomes, and how every
face shows the slot (usage, stdin, the Nushell module, OpenAPI, completions).

score: 3 exact, 2 natural, 1 coerced (a number in a Tensor slot), 0 does not fit. Overload choice
sums scores, so `add $a 2` picks add.Scalar and `add $a $b` picks add.Tensor, as PyTorch does.
A new kind is one row here plus its converter (and, for a new handle kind, a row in registry/kinds.py).
"""
import re
from dataclasses import dataclass
from typing import Callable

from torchsh.registry.names import is_pattern
from torchsh.table.values import as_float, as_list, check_int, tensor_from_json
from torchsh.vocab import DTYPES, LAYOUTS, MEMORY_FORMATS, device_from_text

_DEVICE_RE = re.compile(r"^(cpu|cuda|mps|meta|xpu)(:\d+)?$")
_HANDLE_WORDS = ("handle", "stdin", "name")  # token classes that name a held object (`@enc`: registry/names.py)


@dataclass(frozen=True)
class ArgKind:
    name: str                 # ArgSpec.kind: the word every table, face and test uses for it
    score: Callable           # token -> 3 exact, 2 natural, 1 coerced, 0 does not fit (a null token aside)
    convert: Callable         # (token, ctx) -> the value the op receives; TorchshError when it cannot
    aten: tuple = ()          # schema spellings of one value (`ScalarType` is a dtype)
    aten_list: tuple = ()     # schema spellings of a list (`int[]` is an int_list)
    metavar: str = ""         # the word usage lines show; "" shows the argument's name in capitals
    item: str = ""            # a handle-list kind (several words): the kind each word is read as
    variadic: bool = False    # takes several words (an item list, or argv's words after `--`)
    handle: str = ""          # the handle kind (registry/kinds.py) its words name; a handle of another
                              # kind fits only as a last resort. "" any kind, or no handle at all. A one-word
                              # row's convert of a handle is registry.get(word, handle): api/calls.py relies on it
    stdin: str = ""           # "line": an open slot takes one stdin line each; "text": all of stdin is one value
    null_score: int = 0       # how well a JSON null fits when the slot is not optional (as text)
    null_as_text: bool = False  # a null word is its text ("null"), not None
    nu_type: str = None       # the parameter's type in torch.nu (None: untyped); its completer comes from `complete`
    schema: dict = None       # the OpenAPI schema of one value in args/kwargs
    complete: str = ""        # TAB's source: handles, dtypes, devices, bools, layouts, memory_formats, files


def _handle_score(tok):
    return 3 if tok.cls in _HANDLE_WORDS else 0


def _held(handle_kind):
    return lambda tok, ctx: ctx.registry.get(tok.value, handle_kind)


def _tensor(tok, ctx):
    if tok.cls in _HANDLE_WORDS:
        return ctx.registry.get(tok.value, "tensor")
    return tensor_from_json(check_int(tok.value, tok.text) if tok.cls == "int" else tok.value, tok.text)


def _any_handle(tok, ctx):
    if tok.cls == "name" and is_pattern(tok.value):
        return tok.value.strip()  # `torch free '@exp1/*'`: the verb matches it; elsewhere the registry refuses it
    ctx.registry.entry(tok.value)  # validates: unknown, stale and malformed handles and names fail here
    return ctx.registry.resolve(tok.value)


def _number(tok, ctx):
    return check_int(tok.value, tok.text) if tok.cls == "int" else tok.value


def _list_score(kind):
    def score(tok):
        if tok.cls == "list":
            return 3
        if tok.cls in ("int", "float") and kind != "bool_list":
            return 2 if kind == "float_list" or tok.cls == "int" else 0
        return 2 if tok.cls == "str" and "," in tok.value else 0
    return score


def _device(tok, ctx):
    return device_from_text("cuda:%d" % check_int(tok.value, tok.text) if tok.cls == "int" else tok.value)


def _str_list(tok, ctx):
    return [str(x) for x in tok.value] if tok.cls == "list" else [x for x in tok.value.split(",") if x]


def _path(tok, ctx):
    return ctx.path(tok.text)  # the caller's cwd; on a remote context only NAME:/path (context.py)


def _json(tok, ctx):
    return ctx.registry.get(tok.value) if tok.cls in _HANDLE_WORDS else tok.value


def _named(table):
    return lambda tok: 3 if tok.cls == "str" and tok.value in table else 0


def _nothing(tok):
    return 0


def _as_is(tok, ctx):
    return tok.value


_STR, _INT, _NUM, _BOOL = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
_TENSOR = {"type": ["string", "number", "boolean", "array"], "description": "a tensor handle, or a number or nested list"}
_STRS = {"type": "array", "items": _STR}

# token class -> score, built once (a dict literal in the lambda would be rebuilt on every call)
_TENSOR_FIT = {"handle": 3, "int": 1, "float": 1, "bool": 1, "list": 1, "stdin": 3, "name": 3}
_SCALAR_FIT = {"int": 3, "float": 3, "bool": 2}

KINDS = {k.name: k for k in (
    ArgKind("tensor", lambda t: _TENSOR_FIT.get(t.cls, 0),
            _tensor, aten=("Tensor",), metavar="TENSOR", handle="tensor", stdin="line", schema=_TENSOR,
            complete="handles"),
    ArgKind("tensors", _nothing, _as_is, aten_list=("Tensor",), metavar="TENSOR", item="tensor", variadic=True,
            handle="tensor", stdin="line", schema={"type": "array", "items": _TENSOR}, complete="handles"),
    ArgKind("scalar", lambda t: _SCALAR_FIT.get(t.cls, 0), _number,
            aten=("Scalar", "complex"), nu_type="number", schema=_NUM),
    ArgKind("int", lambda t: 3 if t.cls == "int" else 0, _number, aten=("int", "SymInt"), nu_type="int", schema=_INT),
    ArgKind("float", lambda t: 3 if t.cls in ("int", "float") else 0, lambda t, ctx: as_float(t.value, t.text),
            aten=("float",), nu_type="number", schema=_NUM),
    ArgKind("bool", lambda t: 3 if t.cls == "bool" else (2 if t.cls == "int" and t.value in (0, 1) else 0),
            lambda t, ctx: bool(t.value), aten=("bool",), schema=_BOOL, complete="bools"),
    ArgKind("str", lambda t: 3 if t.cls == "str" else 1, lambda t, ctx: t.value if t.cls == "str" else t.text,
            aten=("str",), null_score=1, null_as_text=True, nu_type="string", schema=_STR),
    ArgKind("dtype", lambda t: 3 if t.cls == "str" and t.value.replace("torch.", "") in DTYPES else 0,
            lambda t, ctx: DTYPES[t.value.replace("torch.", "")], aten=("ScalarType",), metavar="DTYPE",
            nu_type="string", schema=dict(_STR, enum=list(DTYPES)), complete="dtypes"),
    ArgKind("device", lambda t: 3 if t.cls == "str" and _DEVICE_RE.match(t.value) else (1 if t.cls == "int" else 0),
            _device, aten=("Device",), metavar="DEVICE", nu_type="string",
            schema={"type": ["string", "integer"]}, complete="devices"),
    ArgKind("layout", _named(LAYOUTS), lambda t, ctx: LAYOUTS[t.value], aten=("Layout",), nu_type="string",
            schema=dict(_STR, enum=list(LAYOUTS)), complete="layouts"),
    ArgKind("memory_format", _named(MEMORY_FORMATS), lambda t, ctx: MEMORY_FORMATS[t.value],
            aten=("MemoryFormat",), nu_type="string", schema=dict(_STR, enum=list(MEMORY_FORMATS)),
            complete="memory_formats"),
    ArgKind("generator", _nothing, _as_is, aten=("Generator",)),
    ArgKind("handle", _handle_score, _any_handle, aten=("Handle",), metavar="HANDLE", stdin="line",
            nu_type="string", schema=_STR, complete="handles"),
    ArgKind("handles", _nothing, _as_is, aten_list=("Handle",), metavar="HANDLE", item="handle", variadic=True,
            stdin="line", schema=_STRS, complete="handles"),
    ArgKind("module", _handle_score, _held("nn"), aten=("Module",), metavar="MODEL", handle="nn", stdin="line",
            nu_type="string", schema=_STR, complete="handles"),
    ArgKind("modules", _nothing, _as_is, aten_list=("Module",), metavar="MODEL", item="module", variadic=True,
            handle="nn", stdin="line", schema=_STRS, complete="handles"),
    ArgKind("optimizer", _handle_score, _held("optim"), aten=("Optimizer",), metavar="OPT", handle="optim",
            stdin="line", nu_type="string", schema=_STR, complete="handles"),
    ArgKind("scheduler", _handle_score, _held("sched"), aten=("Scheduler",), metavar="SCHED", handle="sched",
            stdin="line", nu_type="string", schema=_STR, complete="handles"),
    ArgKind("dataset", _handle_score, _held("data"), aten=("Dataset",), metavar="DATA", handle="data",
            stdin="line", nu_type="string", schema=_STR, complete="handles"),
    ArgKind("json", lambda t: 2, _json, aten=("Json",), metavar="JSON", stdin="text", null_score=1, schema={},
            complete="handles"),
    ArgKind("path", lambda t: 3 if t.cls == "str" else 1, _path, aten=("Path",), metavar="FILE", null_score=1,
            null_as_text=True, nu_type="path", schema=_STR, complete="files"),
    ArgKind("argv", lambda t: 3 if t.cls == "argv" else 0, _as_is, aten=("Argv",), variadic=True, schema=_STRS),
    ArgKind("int_list", _list_score("int_list"), lambda t, ctx: as_list("int_list", t), aten_list=("int", "SymInt"),
            metavar="SHAPE", schema={"type": ["array", "integer"], "items": _INT}),
    ArgKind("float_list", _list_score("float_list"), lambda t, ctx: as_list("float_list", t),
            aten_list=("float", "Scalar"), schema={"type": ["array", "number"], "items": _NUM}),
    ArgKind("bool_list", _list_score("bool_list"), lambda t, ctx: as_list("bool_list", t), aten_list=("bool",),
            schema={"type": "array", "items": _BOOL}),
    ArgKind("str_list", lambda t: 3 if t.cls == "list" else (2 if t.cls == "str" else 0), _str_list,
            aten_list=("str",), schema={"type": ["array", "string"], "items": _STR}),
    ArgKind("loader", _handle_score, _held("loader"), aten=("Loader",), metavar="LOADER", handle="loader",
            stdin="line", nu_type="string", schema=_STR, complete="handles"),
    ArgKind("paths", _nothing, _as_is, aten_list=("Path",), metavar="FILE", item="path", variadic=True,
            schema=_STRS, complete="files"),
    ArgKind("distribution", _handle_score, _held("dist"), aten=("Distribution",), metavar="DIST", handle="dist",
            stdin="line", nu_type="string", schema=_STR, complete="handles"),
    ArgKind("lm", _handle_score, _held("lm"), aten=("LanguageModel",), metavar="LM", handle="lm", stdin="line",
            nu_type="string", schema=_STR, complete="handles"),
    ArgKind("chat", _handle_score, _held("chat"), aten=("Conversation",), metavar="CHAT", handle="chat",
            stdin="line", nu_type="string", schema=_STR, complete="handles"),
    ArgKind("job", _handle_score, _held("job"), aten=("Job",), metavar="JOB", handle="job", stdin="line",
            nu_type="string", schema=_STR, complete="handles"),
    # a file the op writes, and folders by what the op does with them (it reads, writes, or both): on a
    # remote context the client uploads what the op reads and downloads what it wrote (Context.path)
    ArgKind("out_path", lambda t: 3 if t.cls == "str" else 1, lambda tok, ctx: ctx.path(tok.text, "out"),
            aten=("OutPath",), metavar="FILE", null_score=1, null_as_text=True, nu_type="path", schema=_STR,
            complete="files"),
    ArgKind("dir_path", lambda t: 3 if t.cls == "str" else 1, lambda tok, ctx: ctx.path(tok.text, "in"),
            aten=("DirPath",), metavar="DIR", null_score=1, null_as_text=True, nu_type="path", schema=_STR,
            complete="files"),
    ArgKind("out_dir_path", lambda t: 3 if t.cls == "str" else 1, lambda tok, ctx: ctx.path(tok.text, "dir_out"),
            aten=("OutDirPath",), metavar="DIR", null_score=1, null_as_text=True, nu_type="path", schema=_STR,
            complete="files"),
    ArgKind("inout_dir_path", lambda t: 3 if t.cls == "str" else 1,
            lambda tok, ctx: ctx.path(tok.text, "dir_inout"), aten=("InOutDirPath",), metavar="DIR", null_score=1,
            null_as_text=True, nu_type="path", schema=_STR, complete="files"),
)}

# The kinds by what they share, for the readers that ask one question of every row
VARIADIC_KINDS = tuple(k.name for k in KINDS.values() if k.variadic)      # tensors, handles, modules, argv
LIST_FLAG_KINDS = tuple(k.name for k in KINDS.values() if k.item)         # `--inputs A B`: several words
STDIN_KINDS = tuple(k.name for k in KINDS.values() if k.stdin == "line")  # handle slots: stdin fills them
STDIN_TEXT_KINDS = tuple(k.name for k in KINDS.values() if k.stdin == "text")  # `echo '[1,2]' | torch tensor`
# the return types of one object a command makes (`Tensor`, `Module`, …): `--name` names it (Context.naming)
OBJECT_RETURNS = frozenset(a for k in KINDS.values() if k.handle and not k.variadic for a in k.aten)


def creates(op):
    """Does the op make an object (one of its forms returns one)? Those take `--name` (torch.nu, completions)."""
    return any(ov.returns in OBJECT_RETURNS for ov in op.overloads)


TENSOR_KINDS = tuple(k.name for k in KINDS.values() if k.handle == "tensor")   # tensor, tensors


def score(kind, tok):
    row = KINDS.get(kind)
    if row is None:
        return 0
    if tok.cls == "null":  # None fits optional args (bind() checks that); elsewhere only as text
        return row.null_score
    return row.score(tok)


def convert(kind, tok, ctx):
    """Turn a token into the value the op receives. Raises TorchshError for bad handles or values."""
    row = KINDS.get(kind)
    if tok.cls == "null" and not (row and row.null_as_text):
        return None
    return row.convert(tok, ctx) if row else tok.value
