"""A big JSON body (PREPARE_BYTES and up), decoded before its request takes its turn on the tensor thread.

routes.lockfree sends such a POST /v1/ops/{op} to a quick worker; post_op answers it there with http.Prepare,
whose run() is prepare() below; the request then queues for the tensor thread with the body decoded
(request.prepared), so the shells around it never wait for the decoding (a 15M-number body held every other
`torch add` for 2.9 s).

A thread of its own is not enough: json.loads is one C call that holds the GIL from the first byte to the
last (1.4 s for 3M numbers, and no other thread of the daemon ran a line meanwhile). So the body is read in
pieces of about PIECE characters, each through json's own C scanner, the GIL changing hands between them:
runs of whole array elements (cut after a bracket or comma that ends one), single elements where no run can
be cut (a string, which may hide brackets and commas; an element bigger than a piece, descended into),
objects key by key. The value is the one json.loads makes (call/tokens.loads), NaN and Infinity included.

The words of the body (`tensors`, `args`, `kwargs`' values) that are big arrays of numbers become
NumberLists (table/values.py): the numpy array of their numbers is built here, a slice at a time, and their
text is the body's own, so that the tensor thread neither walks millions of Python numbers (torch.tensor of a
list) nor writes them back as JSON (a token's text).

The decoding is admitted against the memory budget before it starts (peak_bytes), or refused: out_of_memory.
"""
import gc
import json
import json.scanner
import re
import threading

import numpy as np

from torchsh.call.tokens import MAX_JSON_DEPTH
from torchsh.errors import TorchshError
from torchsh.table.values import NumberList, nonfinite_strings

PREPARE_BYTES = 64 << 10  # smaller bodies decode in well under a millisecond: on the tensor thread, as before
PIECE = 64 << 10          # characters a call of the C scanner reads (~1 ms); an array this long is a word's data
SLICE_NUMBERS = 1 << 14   # numbers numpy reads from Python objects a call
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # json.loads' own scanner (the C one)
_WS = re.compile(r"[ \t\n\r]*")
_TENSOR_DTYPES = (np.dtype(bool), np.dtype(np.int64), np.dtype(np.float64))  # what numpy makes of JSON numbers


def prepare(app, request):
    """Decode request.body into request.prepared (dropping the body), its big number words made NumberLists.
    Raises out_of_memory (the budget) or bad_request (not JSON, or no object: what post_op would say)."""
    body = request.body
    budget = getattr(app, "memory", None)
    if budget is not None:
        budget.admit_bytes(peak_bytes(body), "the decoded JSON body")
    with _COLLECTOR_PAUSE:
        try:
            value, text, spans = decode(body)
        except ValueError as e:  # JSONDecodeError, and nesting past MAX_JSON_DEPTH
            raise TorchshError("bad_request", "body is not JSON: %s" % e) from None
        if not isinstance(value, dict):
            raise TorchshError("bad_request", "body must be a JSON object")
        _number_words(value, text, spans)
    request.prepared, request.body = value, b""


class _CollectorPause:
    """Python's cyclic garbage collector paused while bodies decode: each of the passes their millions of new
    lists would set off walks every object of the daemon, holding the GIL (0.3-0.5 s a pass for 1.5M rows of
    two numbers). Decoding makes no cycles; the collector runs again once the last decoding ends."""

    def __init__(self):
        self.lock, self.decoding, self.was_enabled = threading.Lock(), 0, False

    def __enter__(self):
        with self.lock:
            self.decoding += 1
            if self.decoding == 1:
                self.was_enabled = gc.isenabled()
                gc.disable()

    def __exit__(self, *exc):
        with self.lock:
            self.decoding -= 1
            if self.decoding == 0 and self.was_enabled:
                gc.enable()


_COLLECTOR_PAUSE = _CollectorPause()


def peak_bytes(body):
    """What decoding `body` may hold at its peak, beside the body: its text as a str and the big words' texts
    (ASCII: a byte a character), and per number a Python object, a list slot and a numpy slot (24 + 8 + 8);
    per array a list object. Every value but an array's or object's first follows a comma."""
    return 2 * len(body) + 40 * (body.count(b",") + 1) + 64 * body.count(b"[")


def decode(body):
    """(the value json.loads makes of body, body as a str, {id(array): (start, end)} of the arrays of PIECE
    characters and more). Raises ValueError as json.loads does."""
    text = body.decode(json.detect_encoding(body), "surrogatepass") if isinstance(body, (bytes, bytearray)) else body
    spans = {}
    value, end = _value(text, _WS.match(text, 0).end(), 1, spans)
    end = _WS.match(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value, text, spans


def _value(s, i, depth, spans):
    if depth > MAX_JSON_DEPTH:
        raise ValueError("JSON nested more than %d levels deep" % MAX_JSON_DEPTH)
    c = s[i:i + 1]
    if c == "[":
        return _array(s, i, depth, spans)
    if c == "{":
        return _object(s, i, depth, spans)
    return _scan(s, i)


def _scan(s, i):
    """The scalar or string at s[i] (arrays and objects go through _array and _object)."""
    try:
        return _SCAN(s, i)
    except StopIteration as e:
        raise json.JSONDecodeError("Expecting value", s, e.value) from None


def _object(s, i, depth, spans):
    out, i = {}, _WS.match(s, i + 1).end()
    if s.startswith("}", i):
        return out, i + 1
    while True:
        if not s.startswith('"', i):
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", s, i)
        key, i = _scan(s, i)
        i = _WS.match(s, i).end()
        if not s.startswith(":", i):
            raise json.JSONDecodeError("Expecting ':' delimiter", s, i)
        out[key], i = _value(s, _WS.match(s, i + 1).end(), depth + 1, spans)
        i = _WS.match(s, i).end()
        if s.startswith("}", i):
            return out, i + 1
        if not s.startswith(",", i):
            raise json.JSONDecodeError("Expecting ',' delimiter", s, i)
        i = _WS.match(s, i + 1).end()


def _array(s, start, depth, spans):
    """The array at s[start] ("["), run by run where runs can be cut, element by element elsewhere."""
    out, i = [], _WS.match(s, start + 1).end()
    if s.startswith("]", i):
        return out, i + 1
    single_until = -1  # no run could be cut before this point: element by element until then
    while True:
        run = None
        if i > single_until:
            end, cut = _run_end(s, i)
            run = _run(s, i, end, depth) if cut else None
            single_until = -1 if run is not None else end
        if run is not None:
            out.extend(run)
            i = end
        else:
            item, i = _value(s, i, depth + 1, spans)
            out.append(item)
        i = _WS.match(s, i).end()
        if s.startswith("]", i):
            break
        if not s.startswith(",", i):
            raise json.JSONDecodeError("Expecting ',' delimiter", s, i)
        i = _WS.match(s, i + 1).end()
    if i + 1 - start >= PIECE:
        spans[id(out)] = (start, i + 1)
    return out, i + 1


def _run_end(s, i):
    """(end, True): a run of whole elements of this array may be s[i:end], about PIECE characters; (end, False):
    none can be cut before end (a string in the way, which may hide brackets and commas; an element of more
    than 4 pieces, which is descended into), so the elements up to there go one by one."""
    cut = i + PIECE
    close = s.find("]", i, cut)
    if close != -1 and s.find("[", i, close) == -1 and s.find("{", i, close) == -1:
        return close, True  # the rest of this array, none of its elements nested (or a string: _run says)
    if cut >= len(s):
        return len(s), False
    if s[i] != "[":  # scalars: cut at the first comma after a piece, unless a bracket, brace or string is first
        comma = s.find(",", cut, cut + PIECE)
        if comma == -1:
            return cut + PIECE, False
        return comma, not any(s.find(c, i, comma) != -1 for c in '"[]{')
    end = s.find("]", cut - 1, i + 4 * PIECE)  # arrays: cut after the bracket that ends one of this array's elements
    if end == -1:
        return cut, False
    depth = s.count("[", i, end + 1) - s.count("]", i, end + 1)
    while depth > 0 and end - i < 4 * PIECE:
        after = s.find("]", end + 1, i + 4 * PIECE)
        if after == -1:
            return i + 4 * PIECE, False
        depth += s.count("[", end + 1, after) - 1
        end = after
    if depth != 0:
        return max(end, cut), False
    return end + 1, s.find('"', i, end) == -1 and s.find("{", i, end) == -1


def _run(s, i, end, depth):
    """The elements s[i:end] as a list, or None when they are no run of whole elements of this array (its
    closing bracket on the way, a cut inside a string: the caller then goes element by element, and finds any
    error where it is, as a comma before the array's end)."""
    if end <= i:
        return None
    try:
        items, used = _SCAN("[" + s[i:end] + "]", 0)
    except (StopIteration, ValueError, RecursionError):
        return None
    if used != end - i + 2:
        return None
    if _nested_past(items, MAX_JSON_DEPTH - depth):
        raise ValueError("JSON nested more than %d levels deep" % MAX_JSON_DEPTH)
    return items


def _nested_past(items, room):
    """Whether items (elements of an array `room` levels above the deepest allowed) nest containers deeper."""
    level = [x for x in items if isinstance(x, (list, dict))]
    for _ in range(room):
        if not level:
            return False
        level = [y for x in level for y in (x.values() if isinstance(x, dict) else x) if isinstance(y, (list, dict))]
    return bool(level)


def _number_words(body, text, spans):
    """The big arrays among the body's words, as NumberLists (in place)."""
    for field in ("tensors", "args"):
        words = body.get(field)
        if type(words) is list:
            words[:] = [_number_list(w, text, spans) for w in words]
    kwargs = body.get("kwargs")
    if type(kwargs) is dict:
        for name, word in kwargs.items():
            kwargs[name] = _number_list(word, text, spans)


def _number_list(word, text, spans):
    if type(word) is not list or id(word) not in spans:
        return word
    start, end = spans[id(word)]
    return NumberList(word, numbers_array(word), text[start:end])


def numbers_array(items):
    """The numpy array torch.tensor(items) reads (float64 where it makes the default float dtype), made a slice
    at a time; None unless items is a rectangular array of JSON numbers and booleans (its "NaN", "Infinity",
    "-Infinity" strings read as floats) within int64."""
    if not items:
        return np.empty(0)
    step = max(1, SLICE_NUMBERS // _numbers_per_item(items[0]))
    parts = []
    for k in range(0, len(items), step):
        part = _slice_array(items[k:k + step])
        if part is None or (parts and part.shape[1:] != parts[0].shape[1:]):
            return None
        parts.append(part)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _slice_array(items):
    try:
        array = np.array(items)
        if array.dtype.kind in "UO":  # strings: only the non-finite spellings are numbers (tensor_from_json's rule)
            array = np.array(nonfinite_strings(items))
    except (ValueError, TypeError, OverflowError, TorchshError):
        return None
    return array if array.dtype in _TENSOR_DTYPES else None


def _numbers_per_item(item):
    n = 1
    while type(item) is list and item:
        n, item = n * len(item), item[0]
    return n
