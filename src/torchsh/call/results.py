"""What an op returns, as values both faces turn into their reply: the wire form (to_wire: objects
registered as handles), the JSON API's bytes, the result types verbs return (Text, Table, Binary,
LateJson) and the block-form directive (Exec).

New objects are registered here (in the caller's scope) and become handles; named tuples keep their
field names; everything else is JSON.
"""
import json
import math
import re
from dataclasses import dataclass
from typing import NamedTuple

import torch

from torchsh.errors import TorchshError
from torchsh.registry.kinds import kind_of
from torchsh.vocab import dtype_name


class Text(str):
    """A verb's output to print verbatim (help, tables, `torch print`)."""


class JsonText(Text):
    """Ready-made JSON text (tensor values with shortest floats): printed as is, embedded as is by the API."""


class Table(list):
    """JSON rows (under --json and through the API) that print as aligned columns on a terminal."""

    def __init__(self, rows, columns):
        super().__init__(rows)
        self.columns = columns

    def text(self):
        if not self:
            return ""
        cells = [[str(r.get(c, "")) for c in self.columns] for r in self]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns) - 1)]
        return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + ("  " if widths else "")
                       + row[-1] + "\n" for row in cells)


class Binary(bytes):
    """Raw bytes for stdout (`torch value --format npy`)."""


class LateJson:
    """JSON made after the op returns, outside the tensor lock (`torch value` of a snapshot):
    render() gives the bytes, with non-finite floats as strings or, with nan="bare", bare tokens.
    The render function takes (nan, start, end): bytes joined around the JSON in one go (no copy of big text)."""

    def __init__(self, render):
        self._render = render

    def render(self, nan=None, end=b"", start=b""):
        return self._render(nan, start, end)


class Streams(NamedTuple):
    """A verb's own stdout, stderr and exit status: a job's output for its follower (jobs/follow.py).
    `follow`: while the job runs, the next poll's words, which the CLI face sends as a follow directive
    (protocol.H_FOLLOW); the JSON face answers the four fields as they are."""
    stdout: str
    stderr: str = ""
    exit: int = 0
    follow: str = None


@dataclass(frozen=True)
class Exec:
    """A block form's answer (`scope -- CMD`, `no_grad -- CMD`, `daemon log -f`): the caller runs argv
    in its own world with env added, then runs then_argv (`scope end ID`). The CLI face sends it to the
    client as an exec directive; the JSON face answers {"exec": {"env", "then"}} and the caller runs it."""
    argv: list
    env: dict
    then_argv: tuple = ()


def to_wire(result, ctx):
    """Register objects and return a JSON-able value (handles as strings)."""
    kind = kind_of(result)
    if kind:
        return ctx.put(result, kind)
    if isinstance(result, (Text, Binary, LateJson)):
        return result
    if isinstance(result, torch.Size):
        return list(result)
    if isinstance(result, torch.dtype):
        return dtype_name(result)
    if isinstance(result, torch.device):
        return str(result)
    fields = _field_names(result)
    if fields:
        return {f: to_wire(getattr(result, f), ctx) for f in fields}
    if isinstance(result, (list, tuple)):
        return [to_wire(x, ctx) for x in result]
    if isinstance(result, dict):
        return {str(k): to_wire(v, ctx) for k, v in result.items()}
    if isinstance(result, (bool, int, str)) or result is None:
        return result
    if isinstance(result, float):
        return result
    if isinstance(result, complex):
        return [result.real, result.imag]
    return str(result)


def _field_names(result):
    """Field names of a named tuple or of PyTorch's structseq returns (torch.return_types.max)."""
    if not isinstance(result, tuple):
        return None
    if hasattr(result, "_fields"):
        return result._fields
    if hasattr(result, "n_fields"):
        return tuple(getattr(result, "__match_args__", ()))
    return None


# Built once: json.dumps with any option builds a new encoder per call (microseconds of every reply)
_COMPACT = json.JSONEncoder(separators=(",", ":"), allow_nan=True)
_COMPACT_FINITE = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def dumps(value):
    """Compact JSON; non-finite floats as NaN, Infinity, -Infinity."""
    return _COMPACT.encode(value)


NAN_MODES = ("string", "bare")
_NONFINITE_TEXTS = {"NaN", "Infinity", "-Infinity"}
_PLAIN_TEXT = re.compile(r"[A-Za-z0-9:/._-]*")  # JSON spells these characters as they are


def json_bytes(value, nan="string"):
    """Compact JSON bytes for a reply. nan="string" (the default): valid JSON (RFC 8259), non-finite
    floats as the strings "NaN", "Infinity", "-Infinity"; nan="bare": Python's bare tokens."""
    if nan == "bare":
        return _COMPACT.encode(value).encode()
    try:
        return _COMPACT_FINITE.encode(value).encode()
    except ValueError:  # a non-finite float somewhere: spell it as a string
        return _COMPACT_FINITE.encode(nonfinite_as_strings(value)).encode()


def nonfinite_as_strings(value):
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (list, tuple)):
        return [nonfinite_as_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: nonfinite_as_strings(v) for k, v in value.items()}
    return value


def result_json(result, wire, nan="string", warnings=()):
    """The bytes of {"result": ...[, "warnings": [...]]} for the JSON API: ready-made JSON text is
    embedded as it is (a bare non-finite scalar quoted unless nan="bare"), a LateJson rendered now,
    anything else dumped. warnings: PyTorch's warnings while the op ran, one line each."""
    end = (b',"warnings":' + json.dumps(list(warnings)).encode() if warnings else b"") + b"}"
    if isinstance(result, LateJson):
        return result.render(nan, end=end, start=b'{"result":')
    if isinstance(result, JsonText):
        text = str(result)
        if nan != "bare" and text.strip() in _NONFINITE_TEXTS:
            text = '"%s"' % text.strip()
        return b'{"result":' + text.encode() + end
    if type(wire) is str and not warnings and _PLAIN_TEXT.fullmatch(wire):  # a handle: what most ops return
        return b'{"result":"' + wire.encode() + b'"}'  # json_bytes' very bytes, without the encoder (~1 us)
    return json_bytes(dict({"result": wire}, **({"warnings": list(warnings)} if warnings else {})), nan)


def nan_mode(query):
    """The ?nan= query parameter of a JSON API request: "string" (default) or "bare"."""
    mode = query.get("nan", "string")
    if mode not in NAN_MODES:
        raise TorchshError("bad_request", "nan=%s: use nan=string (the default) or nan=bare" % mode[:40])
    return mode


def is_finite_number(x):
    return isinstance(x, (int, float)) and not (isinstance(x, float) and not math.isfinite(x))
