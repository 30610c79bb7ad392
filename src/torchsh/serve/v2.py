"""The KServe V2 inference protocol's REST form, pure: a request's input tensors as flat typed arrays
checked against their shapes, and outputs back as the response's tensors. No torch here: the tensors are
made on the tensor thread (serve/batcher.py) from what this module checked.

Tensors come as JSON lists, or raw with the binary tensor data extension (Triton's; its clients speak it):
the header Inference-Header-Content-Length: N says the body's first N bytes are the JSON inference header
and the rest the inputs' raw little-endian bytes, in input order, each input saying how many with
"parameters": {"binary_data_size": B}. An output is asked for raw with "parameters": {"binary_data": true}
(or for all, the request's "parameters": {"binary_data_output": true}); the reply is then framed the same way.

Spec: https://kserve.github.io/website/docs/concepts/architecture/data-plane/v2-protocol (the "Open
Inference Protocol"): $inference_request = {"id"?, "parameters"?, "inputs": [{"name", "shape", "datatype",
"parameters"?, "data"}], "outputs"?: [{"name"}]}; $inference_response = {"model_name", "model_version"?, "id"?,
"outputs": [{"name", "shape", "datatype", "data"}]}; errors {"error": "message"}.
"""
import json
import sys
from array import array
from dataclasses import dataclass

import numpy as np
import orjson

from torchsh.errors import TorchshError

# V2 datatype -> the array typecode its values are read into (FP16 as float: halved on the tensor thread).
# BYTES (strings) and the unsigned types wider than 8 bits are refused: no model of ours takes them.
TYPECODES = {"BOOL": "B", "UINT8": "B", "INT8": "b", "INT16": "h", "INT32": "i", "INT64": "q",
             "FP16": "f", "FP32": "f", "FP64": "d"}
WIDTHS = {"BOOL": 1, "UINT8": 1, "INT8": 1, "INT16": 2, "INT32": 4, "INT64": 8, "FP16": 2, "FP32": 4, "FP64": 8}
MAX_INPUTS = 16
MAX_DEPTH = 1024  # nesting of a request's JSON (orjson's limit)
TOO_DEEP = "the request's JSON is nested too deeply (at most %d levels)" % MAX_DEPTH
HEADER_LENGTH = "inference-header-content-length"  # the binary extension's header (lower case: http.parse_head)
BINARY_HINT = ("binary tensors: the header Inference-Header-Content-Length: BYTES (the JSON's), then the inputs' raw "
               "little-endian bytes in input order, each input with \"parameters\": {\"binary_data_size\": BYTES}")


@dataclass
class Input:
    name: str
    datatype: str
    shape: tuple
    values: array   # flat, row-major

    def rows(self):
        return self.shape[0] if self.shape else 1


@dataclass
class InferRequest:
    inputs: list         # [Input]
    id: object = None    # echoed in the response when given
    outputs: tuple = ()  # the output names asked for (empty: all)
    binary: dict = None  # output name -> raw bytes (True) or JSON (False), as each output asked
    binary_default: bool = False  # the request's binary_data_output: for the outputs that did not say

    def signature(self):
        """What must match for two requests to run in one batch: each input's datatype and row shape."""
        return tuple((i.datatype, i.shape[1:]) for i in self.inputs)

    def binary_output(self, name):
        """True when output NAME goes back as raw bytes (the binary extension), not a JSON list."""
        return (self.binary or {}).get(name, self.binary_default)


@dataclass
class BinaryReply:
    """A response body with raw tensors: its JSON header (a dict) and the bytes after it (edge.v2_response)."""
    header: dict
    tail: bytes


PREDICTION = "prediction"  # a classifier's output of class names (BYTES), beside the model's own (serve/batcher.py)


def output_name(index):
    return "output__%d" % index


def bytes_raw(texts):
    """BYTES as the binary extension sends them: each element its length (4 bytes, little-endian), then UTF-8."""
    out = bytearray()
    for text in texts:
        data = text.encode()
        out += len(data).to_bytes(4, "little") + data
    return bytes(out)


def bad(message, hint=None):
    return TorchshError("bad_argument", message, hint or "a V2 input: {\"name\": \"input__0\", \"shape\": [1, 4], "
                        "\"datatype\": \"FP32\", \"data\": [0.1, 0.2, 0.3, 0.4]}")


def parse_infer(body, max_elements, header_length=None):
    """POST /v2/models/NAME/infer's body -> InferRequest; bad_argument (400) saying what is wrong.
    header_length: Inference-Header-Content-Length's value (the binary extension), None without it."""
    header, raw = _split(body, header_length)
    try:
        doc = loads(header)
    except (ValueError, UnicodeDecodeError) as e:
        raise bad("the %s is not JSON: %s" % ("body" if raw is None else "inference header", e))
    except RecursionError:  # json's, deeper than the interpreter's stack allows
        raise bad(TOO_DEEP) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("inputs"), list) or not doc["inputs"]:
        raise bad("an inference request is a JSON object with a non-empty \"inputs\" list")
    if len(doc["inputs"]) > MAX_INPUTS:
        raise bad("%d inputs: at most %d" % (len(doc["inputs"]), MAX_INPUTS))
    budget, tail = [max_elements], _Tail(raw)
    inputs = [_input(item, i, budget, tail) for i, item in enumerate(doc["inputs"])]
    tail.all_read()
    rows = {i.rows() for i in inputs}
    if len(rows) > 1 or not all(i.shape for i in inputs):
        raise bad("every input needs a first (batch) dimension, the same for all inputs: shapes %s"
                  % [list(i.shape) for i in inputs])
    wanted = doc.get("outputs") or []
    if not isinstance(wanted, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str) for o in wanted):
        raise bad("\"outputs\" is a list of {\"name\": …}")
    asked = {o["name"]: _flag(o, "binary_data") for o in wanted}
    return InferRequest(inputs, doc.get("id"), tuple(asked), {k: v for k, v in asked.items() if v is not None},
                        bool(_flag(doc, "binary_data_output")))


def loads(text):
    """The request's JSON, read by orjson (784 random floats: 26 µs, against json's 128 µs, most of a JSON
    request's cost at the edge); what orjson refuses and json reads (NaN, Infinity, integers past 64 bits) by
    json, so the two read the same requests. Nested deeper than MAX_DEPTH: bad_argument (orjson's limit; json
    would hit the interpreter's recursion limit)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        if "depth" in str(e):  # "depth limit exceeded"
            raise bad(TOO_DEEP) from None
        return json.loads(text)


def _split(body, header_length):
    """(the JSON, the raw tensor bytes after it or None): the body cut where Inference-Header-Content-Length says."""
    if header_length is None:
        return body, None
    if not (header_length.isdigit() and header_length.isascii() and len(header_length) <= 18) \
            or int(header_length) > len(body):
        raise bad("Inference-Header-Content-Length %r is not a length within the %d-byte body"
                  % (header_length[:20], len(body)), BINARY_HINT)
    cut = int(header_length)
    return body[:cut], memoryview(body)[cut:]


def _flag(item, name):
    """A V2 parameter that is true or false (binary_data, binary_data_output); None when not given."""
    params = item.get("parameters")
    if params is None or isinstance(params, dict) and name not in params:
        return None
    if not isinstance(params, dict) or not isinstance(params[name], bool):
        raise bad("\"parameters\" is an object, and its %s true or false" % name)
    return params[name]


class _Tail:
    """The raw tensor bytes after the inference header, read input by input in order."""

    def __init__(self, raw):
        self.raw, self.at = raw, 0

    def take(self, name, size):
        if self.raw is None:
            raise bad("input %s has binary_data_size but the request no Inference-Header-Content-Length" % name,
                      BINARY_HINT)
        if self.at + size > len(self.raw):
            raise bad("input %s: binary_data_size %d runs past the body's %d raw bytes (%d taken before it)"
                      % (name, size, len(self.raw), self.at), BINARY_HINT)
        self.at += size
        return self.raw[self.at - size:self.at]

    def all_read(self):
        if self.raw is not None and self.at != len(self.raw):
            raise bad("the inputs' binary_data_size add up to %d bytes, but %d follow the inference header"
                      % (self.at, len(self.raw)), BINARY_HINT)


def _input(item, index, budget, tail):
    if not isinstance(item, dict):
        raise bad("inputs[%d] is not an object" % index)
    name, datatype, shape, data = item.get("name"), item.get("datatype"), item.get("shape"), item.get("data")
    if not isinstance(name, str):
        raise bad("inputs[%d] has no \"name\"" % index)
    if datatype not in TYPECODES:
        raise bad("input %s: datatype %r is not served" % (name, datatype), "served: %s" % ", ".join(TYPECODES))
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise bad("input %s: \"shape\" is a list of sizes, e.g. [1, 4]" % name)
    count = 1
    for d in shape:
        count *= d
    budget[0] -= count
    if budget[0] < 0:
        raise TorchshError("too_large", "input %s: the request holds more than the served model's limit of "
                           "elements" % name, "send fewer rows a request")
    params = item.get("parameters")
    if isinstance(params, dict) and "binary_data_size" in params:
        values = _raw(name, datatype, count, params["binary_data_size"], data, tail)
    elif not isinstance(data, list):
        raise bad("input %s: \"data\" is a list of values, flat or nested" % name)
    else:
        try:
            values = _typed(TYPECODES[datatype], data)
        except (TypeError, OverflowError):
            raise bad("input %s: \"data\" holds a value that is not %s" % (name, datatype))
    if len(values) != count:
        raise bad("input %s: shape %s needs %d values in \"data\", not %d" % (name, shape, count, len(values)))
    return Input(name, datatype, tuple(shape), values)


def _raw(name, datatype, count, size, data, tail):
    """An input's raw little-endian bytes (the binary extension) as the array its JSON data would make."""
    if type(size) is not int or size != count * WIDTHS[datatype]:
        raise bad("input %s: binary_data_size %r; its shape of %d %s values takes %d bytes"
                  % (name, size, count, datatype, count * WIDTHS[datatype]), BINARY_HINT)
    if data is not None:
        raise bad("input %s has both \"data\" and binary_data_size: one or the other" % name, BINARY_HINT)
    raw = tail.take(name, size)
    values = array(TYPECODES[datatype])
    if datatype == "FP16":  # read as float, as JSON's FP16 is (halved on the tensor thread); numpy widens it
        values.frombytes(np.frombuffer(raw, dtype="<f2").astype("=f4").tobytes())  # without a Python float each
        return values
    values.frombytes(raw)
    if sys.byteorder == "big" and values.itemsize > 1:
        values.byteswap()
    return values


def _typed(typecode, data):
    """data's values in an array: flat data as it is (the common case, read without a scan), nested flattened."""
    try:
        return array(typecode, data)
    except TypeError:
        if not any(isinstance(v, list) for v in data):
            raise
        return array(typecode, flatten(data))


def flatten(data):
    """The spec's nested row-major data ([[1, 2], [3, 4]]) as one flat list."""
    out, stack = [], [iter(data)]
    while stack:
        for v in stack[-1]:
            if isinstance(v, list):
                stack.append(iter(v))
                break
            out.append(v)
        else:
            stack.pop()
    return out


def infer_response(model_name, request, outputs):
    """The response body: outputs [(name, shape, datatype, flat list or raw bytes)], those asked for; a
    BinaryReply when any goes back raw (the batcher made those bytes: request.binary_output)."""
    named = [_output(name, shape, datatype, data) for name, shape, datatype, data in outputs]
    if request.outputs:
        known = {o[0]["name"]: o for o in named}
        missing = [n for n in request.outputs if n not in known]
        if missing:
            raise bad("no output named %s" % ", ".join(missing), "outputs: %s" % ", ".join(known))
        named = [known[n] for n in request.outputs]
    body = {"model_name": model_name, "outputs": [doc for doc, _ in named]}
    if request.id is not None:
        body["id"] = request.id
    raw = [r for _, r in named if r is not None]
    return BinaryReply(body, b"".join(raw)) if raw else body


def _output(name, shape, datatype, data):
    """(the output's JSON, its raw bytes or None)."""
    doc = {"name": name, "datatype": datatype, "shape": list(shape)}
    if isinstance(data, (bytes, bytearray)):
        doc["parameters"] = {"binary_data_size": len(data)}
        return doc, data
    doc["data"] = data
    return doc, None


def error_body(err):
    """V2's error object: {"error": "message"}, with torchsh's stable code beside it."""
    hint = "; %s" % err.hint if err.hint else ""
    return {"error": "%s%s" % (err.message, hint), "code": err.code}
