"""Tokens: one command-line word (or JSON API value) classified once, before any op is chosen.

Pure. A token knows what it looks like (handle, int, float, bool, null, list, dict, str); the
argument kinds in table/kinds.py decide what it may become.
"""
import json
import json.scanner
import re
from dataclasses import dataclass

from torchsh.registry.handles import looks_like_handle

_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|nan|NaN|inf|Infinity)$")
_NONFINITE = {"nan": "NaN", "NaN": "NaN", "inf": "Infinity", "Infinity": "Infinity"}
# JSON deeper than this is refused as a whole: PyTorch tensors have at most a few dozen dimensions, and
# Python's recursive encoders (json.dumps, torch.tensor) would otherwise hit the interpreter's limit.
MAX_JSON_DEPTH = 100
# An integer word longer than this is no int64 (19 digits); Python refuses int() of >4300 digits anyway.
_MAX_INT_DIGITS = 64


@dataclass
class Token:
    cls: str        # handle | name | int | float | bool | null | list | dict | str
    value: object   # the Python value (handle text for handles, `@enc` for a name the registry does not hold)
    text: str       # what the user typed, for error messages

    def __repr__(self):
        return self.text


def from_word(word):
    """Classify one command-line word."""
    w = word.strip()
    if looks_like_handle(w):
        return Token("handle", w, word)
    if w[:1] == "@":
        return Token("name", w, word)
    if _INT_RE.match(w):
        if len(w) > _MAX_INT_DIGITS:  # table/values.py names the range; here only keep int() cheap and legal
            return Token("int", (-1 if w[0] == "-" else 1) * 10 ** _MAX_INT_DIGITS, word)
        return Token("int", int(w), word)
    if _FLOAT_RE.match(w):
        return Token("float", float(w.lstrip("+").replace("Infinity", "inf")), word)
    if w in ("true", "false", "True", "False"):
        return Token("bool", w in ("true", "True"), word)
    if w in ("None", "null", "none"):
        return Token("null", None, word)
    if w[:1] in "[{":
        try:
            return from_json(loads(w), word)
        except ValueError:
            pass
    return Token("str", word, word)


def from_json(value, text=None):
    """Classify a value that arrived as JSON (the API, or a JSON word on the command line)."""
    text = text if text is not None else json.dumps(value, allow_nan=True)
    cls = _JSON_CLASSES.get(type(value))  # what json.loads makes: exact types, one look-up
    if cls is not None:
        return Token(cls, value, text)
    if isinstance(value, bool):
        return Token("bool", value, text)
    if isinstance(value, int):
        return Token("int", value, text)
    if isinstance(value, float):
        return Token("float", value, text)
    if value is None:
        return Token("null", None, text)
    if isinstance(value, list):
        return Token("list", value, text)
    if isinstance(value, dict):
        return Token("dict", value, text)
    if isinstance(value, str):
        if looks_like_handle(value):
            return Token("handle", value.strip(), text)
        if value[:1] == "@":
            return Token("name", value.strip(), text)
        if value in _NONFINITE:
            return Token("float", float(value.replace("Infinity", "inf")), text)
        return Token("str", value, text)
    raise ValueError("unsupported JSON value %r" % (value,))


def named(tok, lookup):
    """A `@name` token as a token of the handle it names now (lookup(text) -> handle or None), keeping its
    text, so overload choice sees the object's kind as it sees a handle's; an unknown name stays a name (its
    slot's conversion then says unknown_name). Lists item by item; other tokens as they are."""
    if isinstance(tok, list):
        return [named(t, lookup) for t in tok]
    if tok.cls != "name":
        return tok
    handle = lookup(tok.value)
    return Token("handle", handle, tok.text) if handle else tok


_JSON_CLASSES = {bool: "bool", int: "int", float: "float", type(None): "null", list: "list", dict: "dict"}


_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # json.loads' own scanner (the C one), called directly


def loads(text):
    """JSON with the non-finite tokens NaN, Infinity and -Infinity (as Python's json reads them).

    Raises ValueError for anything that is not JSON, including nesting deeper than MAX_JSON_DEPTH.
    """
    try:
        if type(text) is bytes and text[:1] == b"{":
            value = _object(text)
        else:
            value = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested more than %d levels deep" % MAX_JSON_DEPTH) from None
    if _brackets(text) > MAX_JSON_DEPTH:  # fewer brackets than that cannot nest deeper (the common body)
        _check_depth(value)
    return value


def _object(text):
    """A body that begins with `{` (UTF-8, RFC 8259 8.1) through the scanner alone: json.loads spends
    ~0.7 µs of a small body on detecting the encoding and on two whitespace regexes. Anything but one
    object and trailing whitespace goes to json.loads, for its error message."""
    s = text.decode("utf-8", "surrogatepass")
    try:
        value, end = _SCAN(s, 0)
    except StopIteration:
        return json.loads(s)
    if end != len(s) and s[end:].strip(" \t\n\r"):
        return json.loads(s)
    return value


def _brackets(text):
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def _check_depth(value):
    """Refuse nesting deeper than MAX_JSON_DEPTH, level by level without recursion (one pass over the items)."""
    level = [value]
    for _ in range(MAX_JSON_DEPTH):
        nested = []
        for v in level:
            if isinstance(v, list):
                nested.extend(x for x in v if isinstance(x, (list, dict)))
            elif isinstance(v, dict):
                nested.extend(x for x in v.values() if isinstance(x, (list, dict)))
        if not nested:
            return
        level = nested
    raise ValueError("JSON nested more than %d levels deep" % MAX_JSON_DEPTH)
