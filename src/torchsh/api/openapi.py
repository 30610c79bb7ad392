"""The OpenAPI 3.1 document, built from the route table and the op table, both handed in by the
caller (daemon/routes.py serves it; tools/regen.py writes docs/openapi.json, a checked-in copy that
a test compares). Pure data in, a dict out: no import of the daemon.

Arguments are described once per kind (components/schemas/kind.NAME, from the kind rows of
table/kinds.py), and per op by GET /v1/ops/{op} (op_description: each argument with its schema),
so the document stays one size however many ops the table holds. A route's path regex becomes its OpenAPI
templates, each named group a declared path parameter (openapi_paths); the V2 routes' errors are V2's, at each
status their handlers answer (api/openapi_v2.py).
"""
import re

from torchsh import __version__, protocol
from torchsh.api import openapi_v2 as v2_schemas
from torchsh.registry.handles import EPOCH_LEN, SERIAL_LEN
from torchsh.registry.kinds import HANDLE_KINDS
from torchsh.table.kinds import KINDS
from torchsh.table.spec import MISSING

_ERROR = {"type": "object", "properties": {"error": {"type": "object", "properties": {
    "code": {"type": "string", "enum": sorted(protocol.ERRORS)}, "message": {"type": "string"},
    "hint": {"type": ["string", "null"]}, "op": {"type": ["string", "null"]}}, "required": ["code", "message"]}}}
# Each field may also be null (the same as leaving it out); other fields are ignored.
_OP_REQUEST = {"type": "object", "properties": {
    "tensors": {"type": ["array", "null"], "items": {"type": "string"}, "description": "the API's stdin: handles filling the tensor slots the args leave open, leftmost first"},
    "args": {"type": ["array", "null"], "description": "positional arguments, bound by kind first; each one's schema is "
             "its argument's (GET /v1/ops/{op} lists them, their kinds are components/schemas/kind.*)"},
    "kwargs": {"type": ["object", "null"], "description": "flags by name, each value as its argument's schema says"},
    "cwd": {"type": ["string", "null"], "description": "folder for relative paths"},
    "env": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "number", "boolean"]},
            "description": "TORCHSH_* settings (TORCHSH_SCOPE, TORCHSH_DEVICE, TORCHSH_NO_GRAD)"},
    "no_grad": {"type": ["boolean", "null"]}, "inference_mode": {"type": ["boolean", "null"]},
    "exec": {"type": ["boolean", "null"], "description": "block forms (scope, no_grad -- CMD): answer "
             "{\"exec\": {env, then}} for the caller to run its own block, instead of an error "
             "(the same as listing exec in the Torchsh-Replies header)"},
    "stderr_tty": {"type": ["boolean", "null"], "description": "the caller's stderr is a terminal: a followed "
                   "job's progress comes as a live line (\r), not plain lines"},
    "name": {"type": ["string", "null"], "description": "the object the op makes gets this @name (as --name)"},
    "ttl": {"type": ["string", "null"], "description": "with name: the name expires then, and frees its object "
            "(30m, 2h, 1d; as --ttl)"}}}


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


# A kind with no JSON form (a torch.Generator) can only be left at its default
_NO_JSON = {"type": "null", "description": "not expressible in JSON: leave it out, or null"}
_ARG = {"type": "object", "properties": {
    "name": {"type": "string"}, "kind": {"type": "string", "description": "components/schemas/kind.KIND"},
    "type": {"type": "string", "description": "the schema's own spelling (Tensor, Scalar, int[]…)"},
    "required": {"type": "boolean"}, "keyword_only": {"type": "boolean", "description": "a kwarg only"},
    "default": {}, "schema": {"type": "object", "description": "the JSON schema of a value for it"}}}
_OP_DESCRIPTION = {"type": "object", "properties": {
    "name": {"type": "string"}, "category": {"type": "string"}, "summary": {"type": "string"},
    "doc": {"type": "string"}, "aliases": {"type": "array", "items": {"type": "string"}},
    "verb": {"type": "boolean"}, "signatures": {"type": "array", "items": {"type": "string"}},
    "read_only": {"type": "boolean", "description": "changes no object, file, setting or generator (a new "
                                                     "object may come out): what a read-only caller's policy admits"},
    "replies": {"type": "array", "items": {"type": "string"}, "description": "protocol.REPLIES it may answer"},
    "overloads": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "returns": {"type": "string"},
        "args": {"type": "array", "items": {"$ref": "#/components/schemas/Argument"}}}}}}}


def kind_schema(kind):
    """The JSON schema of one value of an argument kind (its row's `schema`)."""
    row = KINDS[kind]
    return dict(row.schema) if row.schema is not None else dict(_NO_JSON)


def arg_schema(arg):
    """The JSON schema of one argument (an ArgSpec): its kind's, null allowed when None is, its default."""
    schema = kind_schema(arg.kind)
    if arg.optional and schema.get("type") != "null":
        schema = {"anyOf": [schema, {"type": "null"}]}
    if arg.default is not MISSING:
        schema["default"] = arg.to_json()["default"]
    return schema


def op_description(op):
    """GET /v1/ops/{op}'s reply: the op's row (op.to_json()), its doc, and each argument's JSON schema."""
    row = op.to_json()
    row["doc"] = op.doc
    for ov, ov_row in zip(op.overloads, row["overloads"]):
        for arg, arg_row in zip(ov.args, ov_row["args"]):
            arg_row["schema"] = arg_schema(arg)
    return row


# Bodies by handler. Where the daemon refuses an empty body the body is `required`; the media types name
# the formats (the daemon reads a body whatever its Content-Type says). A bundle is what export returns.
NPY_MEDIA, BUNDLE_MEDIA, CLI_MEDIA = "application/x-npy", "application/x-torchsh-bundle", "application/x-torchsh-cli"
_BINARY = {"type": "string", "format": "binary"}
_HANDLE = r"(%s)://[0-9a-z]{%d}[0-9a-z]{%d,}" % ("|".join(HANDLE_KINDS), EPOCH_LEN, SERIAL_LEN)
_BODIES = {
    "post_op": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpRequest"}}}},
    "post_tensor": {"required": True, "content": {NPY_MEDIA: {"schema": dict(_BINARY, description=(
        "one array as numpy.save writes it (.npy 1.0, 2.0 or 3.0), of a dtype PyTorch holds: bool, (u)int8-64, "
        "float16-64, complex64-128; an upload of 1 MiB or more is refused on its first bytes unless they are "
        "the .npy magic"))}}},
    "post_import": {"required": True, "content": {BUNDLE_MEDIA: {"schema": dict(_BINARY, description=(
        "a bundle as POST /v1/bundle/export returns it: a safetensors stream whose header holds the manifest"))}}},
    "post_export": {"required": True, "content": {"text/plain": {"schema": {
        "type": "string", "pattern": r"^\s*%s(\s+%s)*\s*$" % (_HANDLE, _HANDLE),
        "description": "the handles to export, separated by whitespace (one per line, say)"}}}},
    "post_cli": {"required": True, "content": {CLI_MEDIA: {"schema": dict(_BINARY, description=(
        "fields joined by NUL: %s, cwd, tty flags, TORCHSH_* lines, has-stdin, stdin lines, then the argv "
        "(protocol.encode_cli_request); the reply is 200 whatever the command's fate, its exit status in "
        "the Torchsh-Exit header" % protocol.CLI_FORMAT.decode()))}}},
}
_REPLIES = {"get_op": ("application/json", {"$ref": "#/components/schemas/OpDescription"}),
            "post_export": (BUNDLE_MEDIA, _BINARY)}
_PATH_PARAMS = {"handle": "an object's handle, e.g. tensor://k3f00012",
                "id": "a staged file's or folder's id (POST /v1/files, or a command's Torchsh-Download header)",
                "name": "the name a model is served as (torch serve --name)",
                "version": "a version of the model: torch serve keeps one, whatever it is called here"}


def document(routes, table):
    """routes: (method, path regex, handler, summary) rows; table: the op table, which the `op`
    path parameter describes (how many names it takes; GET /v1/ops lists them)."""
    paths = {}
    described = dict(_PATH_PARAMS, op="an op or verb name, or an alias: %d ops and verbs (GET /v1/ops lists "
                                       "them)" % len(table))
    for method, pattern, handler, summary in routes:
        variants = openapi_paths(pattern)
        for path, groups in variants:
            op = _operation(handler.__name__, summary, path)
            extra = [g for g in groups if g not in variants[0][1]]
            if extra:  # the same handler at another path of its regex: operation ids are unique in a document
                op["operationId"] += "_with_" + "_".join(extra)
            params = [{"name": g, "in": "path", "required": True, "description": described[g],
                       "schema": {"type": "string", "pattern": "^(?:%s)$" % regex}} for g, regex in groups.items()]
            op["parameters"] = params + op.get("parameters", [])
            if not op["parameters"]:
                del op["parameters"]
            paths.setdefault(path, {})[method.lower()] = op
    return {"openapi": "3.1.0",
            "info": {"title": "torchd", "version": __version__,
                     "description": "The torchsh daemon's API on its private Unix socket. Ops are listed by GET /v1/ops."},
            "paths": paths,
            "components": {"schemas": dict({"OpRequest": _OP_REQUEST, "Error": _ERROR, "OpDescription": _OP_DESCRIPTION,
                                            "Argument": _ARG, "V2Error": v2_schemas.ERROR,
                                            "V2InferRequest": v2_schemas.INFER_REQUEST}, **kind_components())}}


def _operation(name, summary, path):
    """One operation: its summary, query parameters, body, and replies: V2's errors on /v2 paths (their own
    shape, each status its handler answers), torchsh's elsewhere (`default`: any status of protocol.ERRORS)."""
    op = {"operationId": name, "summary": summary,
          "responses": {"200": {"description": "success"},
                        "default": {"description": "error", "content": {"application/json": {"schema": _ERROR}}}}}
    if path.startswith("/v2"):
        op["responses"].update(v2_schemas.responses(name))
        op["responses"]["default"]["description"] = "the router's own errors, in torchsh's shape (a bug, memory)"
    params = [_NAN_PARAM] if name in _NAN_HANDLERS else []
    params += [_FORMAT_PARAM] if name == "get_tensor" else []
    if params:
        op["parameters"] = params
    if name in _BODIES or name in v2_schemas.BODIES:
        op["requestBody"] = _BODIES.get(name) or v2_schemas.BODIES[name]
    if name in _REPLIES:
        media, schema = _REPLIES[name]
        op["responses"]["200"]["content"] = {media: {"schema": schema}}
    return op


def kind_components():
    """components/schemas/kind.NAME for every argument kind, so a client reads an argument's `kind`
    (GET /v1/ops/{op}) as a schema."""
    return {"kind." + name: dict(kind_schema(name), description=_kind_text(name)) for name in KINDS}


def _kind_text(name):
    row, own = KINDS[name], kind_schema(name).get("description")
    spelled = row.aten + tuple(t + "[]" for t in row.aten_list)
    words = ([own] if own else []) + ["argument kind %s (schema types: %s)" % (name, ", ".join(spelled))]
    if row.stdin == "line":
        words.append("open slots of this kind take the request's `tensors` (the API's stdin), one each")
    return "; ".join(words)


_OPTIONAL = re.compile(r"\(\?:((?:[^()]|\(\?P<\w+>[^()]*\))*)\)\?")  # (?:…)? holding no group but named ones
_NAMED = re.compile(r"\(\?P<(\w+)>([^()]*)\)")


def openapi_paths(pattern):
    """[(OpenAPI path template, {parameter: its regex})] of a route's path regex: each named group (?P<name>…)
    a {name}; an optional group (?:…)? two paths, without it and with it (/v2/models/{name} and
    /v2/models/{name}/versions/{version})."""
    optional = _OPTIONAL.search(pattern)
    if optional:
        head, tail = pattern[:optional.start()], pattern[optional.end():]
        return openapi_paths(head + tail) + openapi_paths(head + optional.group(1) + tail)
    return [(_NAMED.sub(r"{\1}", pattern), dict(_NAMED.findall(pattern)))]
