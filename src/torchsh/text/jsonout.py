"""The JSON of a reply: compact, valid (non-finite floats as the strings "NaN", "Infinity", "-Infinity"
unless ?nan=bare asks for Python's bare tokens), built with encoders made once. The JSON API's result body
({"result": …, "warnings": […]}) and the CLI's --json both come from here."""
import json
import math
import re

from torchsh.errors import TorchshError
from torchsh.results import JsonText, LateJson


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
