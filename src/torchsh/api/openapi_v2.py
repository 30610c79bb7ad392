"""The KServe V2 routes' part of the OpenAPI document (api/openapi.py): V2's own error shape, the statuses each
V2 handler answers (serve/edge.py, serve/batcher.py, serve/v2.py), and the JSON inference request, with the
constraints the daemon enforces (serve/v2.parse_infer refuses the rest with 400): no more, so that a request
the schema forbids is refused, and none it allows is refused as malformed but for its values (a shape whose
size is not its data's, a model's input of another width)."""
from torchsh import protocol
from torchsh.serve.v2 import MAX_INPUTS, TYPECODES

# V2's error reply (serve/v2.error_body): the message with its hint, and torchsh's stable code beside it
ERROR = {"type": "object", "required": ["error", "code"], "properties": {
    "error": {"type": "string", "description": "what went wrong, and what to do next"},
    "code": {"type": "string", "enum": sorted(protocol.ERRORS), "description": "torchsh's stable error code"}}}

# What each V2 handler may refuse with, besides the router's own errors: torchsh codes, each answered at its
# protocol.ERRORS status in V2's shape. Handlers not here (server metadata, health) answer 200 alone.
REFUSALS = {
    "get_model": ("unknown_model",),
    "get_model_ready": ("unknown_model",),
    # a batch's failure is PyTorch's, classified (errors.from_torch_exception), or the model card's refusal
    "post_infer": ("bad_argument", "unknown_model", "too_large", "queue_full", "not_serving", "torch_error",
                   "dtype_error", "shape_mismatch", "device_error", "autograd_error", "out_of_memory",
                   "not_supported"),
}
_RETRY_AFTER = {"Retry-After": {"required": True, "description": "seconds to wait before trying again",
                                "schema": {"type": "string", "pattern": "^[0-9]+$"}}}
_NOT_READY = {"description": "the model is stopping: it takes no more requests", "content": {"application/json": {
    "schema": {"type": "object", "required": ["name", "ready"],
               "properties": {"name": {"type": "string"}, "ready": {"const": False}}}}}}

_FLAG = {"type": "boolean"}
INFER_REQUEST = {"type": "object", "required": ["inputs"], "properties": {
    "inputs": {"type": "array", "minItems": 1, "maxItems": MAX_INPUTS, "items": {
        "type": "object", "required": ["name", "datatype", "shape", "data"], "properties": {
            "name": {"type": "string"},
            "datatype": {"type": "string", "enum": list(TYPECODES)},
            "shape": {"type": "array", "items": {"type": "integer", "minimum": 0},
                      "description": "its sizes, the first the batch's rows (the same for every input)"},
            "data": {"type": "array", "description": "shape's product of values of datatype, flat or nested "
                                                     "(or, with the binary extension, raw bytes after the JSON)"}}}},
    "outputs": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"},
        "parameters": {"type": "object", "properties": {"binary_data": _FLAG}}}}},
    "parameters": {"type": "object", "properties": {"binary_data_output": _FLAG}}}}
BODIES = {"post_infer": {"required": True, "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/V2InferRequest"}}}}}


def responses(handler):
    """The replies of a V2 handler besides 200: each status it refuses with, in V2's error shape (the codes it
    may carry there), 429 with Retry-After; a model's readiness is 503 while it stops. A 404 may also be the
    router's own, in torchsh's shape: a name or version with characters no route takes (outside [\\w.-])."""
    by_status = {}
    for code in REFUSALS.get(handler, ()):
        by_status.setdefault(protocol.http_status(code), []).append(code)
    out = {}
    for status, codes in sorted(by_status.items()):
        schema = {"allOf": [{"$ref": "#/components/schemas/V2Error"}], "properties": {"code": {"enum": codes}}}
        if status == 404:
            schema = {"anyOf": [schema, {"$ref": "#/components/schemas/Error"}]}
        out[str(status)] = {"description": "V2 error: " + ", ".join(codes) + (
            " (or the router's not_found: no route takes the path)" if status == 404 else ""),
            "content": {"application/json": {"schema": schema}}}
        if "queue_full" in codes:
            out[str(status)]["headers"] = _RETRY_AFTER
    if handler == "get_model_ready":
        out["503"] = _NOT_READY
    return out
