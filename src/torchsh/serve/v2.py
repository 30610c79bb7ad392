"""The KServe V2 inference protocol's JSON (REST) form, pure: a request's input tensors as flat typed arrays
checked against their shapes, and outputs back as the response's tensors. No torch here: the tensors are
made on the tensor thread (serve/batcher.py) from what this module checked.

Spec: https://kserve.github.io/website/docs/concepts/architecture/data-plane/v2-protocol (the "Open
Inference Protocol"): $inference_request = {"id"?, "parameters"?, "inputs": [{"name", "shape", "datatype",
"parameters"?, "data"}], "outputs"?: [{"name"}]}; $inference_response = {"model_name", "model_version"?, "id"?,
"outputs": [{"name", "shape", "datatype", "data"}]}; errors {"error": "message"}.
"""
import json
from array import array
from dataclasses import dataclass

from torchsh.errors import TorchshError

# V2 datatype -> the array typecode its values are read into (FP16 as float: halved on the tensor thread).
# BYTES (strings) and the unsigned types wider than 8 bits are refused: no model of ours takes them.
TYPECODES = {"BOOL": "B", "UINT8": "B", "INT8": "b", "INT16": "h", "INT32": "i", "INT64": "q",
             "FP16": "f", "FP32": "f", "FP64": "d"}
MAX_INPUTS = 16


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

    def signature(self):
        """What must match for two requests to run in one batch: each input's datatype and row shape."""
        return tuple((i.datatype, i.shape[1:]) for i in self.inputs)


def bad(message, hint=None):
    return TorchshError("bad_argument", message, hint or "a V2 input: {\"name\": \"input__0\", \"shape\": [1, 4], "
                        "\"datatype\": \"FP32\", \"data\": [0.1, 0.2, 0.3, 0.4]}")


def parse_infer(body, max_elements):
    """POST /v2/models/NAME/infer's body -> InferRequest; bad_argument (400) saying what is wrong."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise bad("the body is not JSON: %s" % e)
    if not isinstance(doc, dict) or not isinstance(doc.get("inputs"), list) or not doc["inputs"]:
        raise bad("an inference request is a JSON object with a non-empty \"inputs\" list")
    if len(doc["inputs"]) > MAX_INPUTS:
        raise bad("%d inputs: at most %d" % (len(doc["inputs"]), MAX_INPUTS))
    budget = [max_elements]
    inputs = [_input(item, i, budget) for i, item in enumerate(doc["inputs"])]
    rows = {i.rows() for i in inputs}
    if len(rows) > 1 or not all(i.shape for i in inputs):
        raise bad("every input needs a first (batch) dimension, the same for all inputs: shapes %s"
                  % [list(i.shape) for i in inputs])
    wanted = doc.get("outputs") or []
    if not isinstance(wanted, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str) for o in wanted):
        raise bad("\"outputs\" is a list of {\"name\": …}")
    return InferRequest(inputs, doc.get("id"), tuple(o["name"] for o in wanted))


def _input(item, index, budget):
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
    if not isinstance(data, list):
        raise bad("input %s: \"data\" is a list of values, flat or nested" % name)
    try:
        values = _typed(TYPECODES[datatype], data)
    except (TypeError, OverflowError):
        raise bad("input %s: \"data\" holds a value that is not %s" % (name, datatype))
    if len(values) != count:
        raise bad("input %s: shape %s needs %d values in \"data\", not %d" % (name, shape, count, len(values)))
    return Input(name, datatype, tuple(shape), values)


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
    """The response body: outputs [(shape, datatype, flat list)] as output__0, output__1, …, those asked for."""
    named = [{"name": "output__%d" % i, "datatype": datatype, "shape": list(shape), "data": data}
             for i, (shape, datatype, data) in enumerate(outputs)]
    if request.outputs:
        known = {o["name"]: o for o in named}
        missing = [n for n in request.outputs if n not in known]
        if missing:
            raise bad("no output named %s" % ", ".join(missing), "outputs: %s" % ", ".join(known))
        named = [known[n] for n in request.outputs]
    body = {"model_name": model_name, "outputs": named}
    if request.id is not None:
        body["id"] = request.id
    return body


def error_body(err):
    """V2's error object: {"error": "message"}, with torchsh's stable code beside it."""
    hint = "; %s" % err.hint if err.hint else ""
    return {"error": "%s%s" % (err.message, hint), "code": err.code}
