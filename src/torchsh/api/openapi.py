"""The OpenAPI 3.1 document, built from the route table and the op table, both handed in by the
caller (daemon/routes.py serves it; tools/regen.py writes docs/openapi.json, a checked-in copy that
a test compares). Pure data in, a dict out: no import of the daemon."""
import re

from torchsh import __version__, protocol

_ERROR = {"type": "object", "properties": {"error": {"type": "object", "properties": {
    "code": {"type": "string", "enum": sorted(protocol.ERRORS)}, "message": {"type": "string"},
    "hint": {"type": ["string", "null"]}, "op": {"type": ["string", "null"]}}, "required": ["code", "message"]}}}
_OP_REQUEST = {"type": "object", "properties": {
    "tensors": {"type": "array", "items": {"type": "string"}, "description": "the API's stdin: handles filling the tensor slots the args leave open, leftmost first"},
    "args": {"type": "array", "description": "positional arguments, bound by kind first"},
    "kwargs": {"type": "object", "description": "flags by name"},
    "cwd": {"type": "string", "description": "folder for relative paths"},
    "env": {"type": "object", "description": "TORCHSH_* settings (TORCHSH_SCOPE, TORCHSH_DEVICE, TORCHSH_NO_GRAD)"},
    "no_grad": {"type": "boolean"}, "inference_mode": {"type": "boolean"},
    "exec": {"type": "boolean", "description": "block forms (scope, no_grad -- CMD): answer "
             "{\"exec\": {env, then}} for the caller to run its own block, instead of an error"}}}


# Replies are valid JSON (RFC 8259) by default; ?nan=bare is for readers of Python's tokens (Nushell's NUON).
_NAN_HANDLERS = ("post_op", "get_tensor", "get_tensors", "get_status")
_NAN_PARAM = {"name": "nan", "in": "query", "required": False,
              "schema": {"type": "string", "enum": ["string", "bare"], "default": "string"},
              "description": "non-finite floats in the reply: \"string\" (default) writes the JSON strings \"NaN\", "
                             "\"Infinity\", \"-Infinity\" (valid JSON); \"bare\" writes Python's bare tokens NaN, "
                             "Infinity, -Infinity (not JSON; Nushell's NUON reads them as floats). An op's own "
                             "\"nan\" kwarg (value) wins"}
_FORMAT_PARAM = {"name": "format", "in": "query", "required": False, "schema": {"type": "string", "enum": ["npy", "json"]},
                 "description": "npy (default): the tensor as an .npy body; json: {\"result\": nested lists}, as "
                                "`torch value` prints them"}


def document(routes, table):
    """routes: (method, path regex, handler, summary) rows; table: the op table, which the `op`
    path parameter describes (how many names it takes; GET /v1/ops lists them)."""
    paths = {}
    path_params = {"op": "an op or verb name, or an alias: %d ops and verbs (GET /v1/ops lists them)"
                         % len(table), "handle": "an object's handle, e.g. tensor://k3f00012"}
    for method, pattern, handler, summary in routes:
        path = _openapi_path(pattern)
        op = {"operationId": handler.__name__, "summary": summary,
              "responses": {"200": {"description": "success"},
                            "default": {"description": "error", "content": {"application/json": {"schema": _ERROR}}}}}
        params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}, "description": text}
                  for n, text in path_params.items() if "{%s}" % n in path]
        if handler.__name__ in _NAN_HANDLERS:
            params.append(_NAN_PARAM)
        if handler.__name__ == "get_tensor":
            params.append(_FORMAT_PARAM)
        if params:
            op["parameters"] = params
        if handler.__name__ == "post_op":
            op["requestBody"] = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpRequest"}}}}
        elif handler.__name__ == "post_tensor":
            op["requestBody"] = {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}
        paths.setdefault(path, {})[method.lower()] = op
    doc = {"openapi": "3.1.0",
           "info": {"title": "torchd", "version": __version__,
                    "description": "The torchsh daemon's API on its private Unix socket. Ops are listed by GET /v1/ops."},
           "paths": paths,
           "components": {"schemas": {"OpRequest": _OP_REQUEST, "Error": _ERROR}}}
    return doc


def _openapi_path(pattern):
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)
