"""Arguments in the OpenAPI document: one components/schemas/kind.NAME per argument kind, from the kind
rows (table/kinds.py), and each op's arguments with their schemas in GET /v1/ops/{op}'s reply."""
import json

import pytest

from torchsh.api import openapi
from torchsh.daemon.routes import ROUTES
from torchsh.table import build_table
from torchsh.table.kinds import KINDS

JSON_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
# the JSON Schema keywords a kind row may use; anything else is a typo a client would silently ignore
KEYWORDS = {"type", "items", "enum", "description", "anyOf", "default", "properties", "required", "format"}


@pytest.fixture(scope="module")
def table():
    return build_table()[0]


def _problems(schema, where):
    """What makes `schema` no JSON Schema fragment: unknown keywords or types, ill-formed enum/items."""
    if not isinstance(schema, dict):
        return ["%s: not an object" % where]
    out = ["%s: unknown keyword %s" % (where, k) for k in schema if k not in KEYWORDS]
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    out += ["%s: unknown type %r" % (where, t) for t in types if t not in JSON_TYPES]
    if "enum" in schema and not (isinstance(schema["enum"], list) and schema["enum"]):
        out.append("%s: enum is not a non-empty list" % where)
    if "items" in schema:
        out += _problems(schema["items"], where + ".items")
    for i, alt in enumerate(schema.get("anyOf", ())):
        out += _problems(alt, "%s.anyOf[%d]" % (where, i))
    return out


def test_every_kind_rows_schema_is_a_json_schema_fragment():
    problems = [p for name in KINDS for p in _problems(openapi.kind_schema(name), name)]
    assert not problems, problems


def test_every_kind_a_table_row_uses_is_a_component_of_the_document(table):
    doc = openapi.document(ROUTES, table)
    components = doc["components"]["schemas"]
    used = {a.kind for op in table.ops.values() for ov in op.overloads for a in ov.args}
    assert used and not {"kind." + k for k in used} - set(components)
    for k in used:
        assert not _problems(components["kind." + k], k)
        assert "argument kind %s" % k in components["kind." + k]["description"]


def test_the_op_replies_schema_and_every_reference_resolve_within_the_document(table):
    doc = openapi.document(ROUTES, table)
    get_op = doc["paths"]["/v1/ops/{op}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert get_op == {"$ref": "#/components/schemas/OpDescription"}
    refs = {r.split("/")[-1] for r in _refs(doc)}
    assert refs <= set(doc["components"]["schemas"]), refs - set(doc["components"]["schemas"])


def _refs(node):
    if isinstance(node, dict):
        return ([node["$ref"]] if "$ref" in node else []) + [r for v in node.values() for r in _refs(v)]
    return [r for v in node for r in _refs(v)] if isinstance(node, list) else []


def test_adds_arguments_come_with_their_kinds_schemas(table):
    reply = openapi.op_description(table.ops["add"])
    args = {(ov["name"], a["name"]): a for ov in reply["overloads"] for a in ov["args"]}
    assert args[("Tensor", "alpha")]["schema"] == {"type": "number", "default": 1}
    assert args[("Tensor", "alpha")]["kind"] == "scalar" and args[("Tensor", "alpha")]["keyword_only"]
    assert args[("Scalar", "other")]["schema"] == {"type": "number"}
    assert "array" in args[("Tensor", "input")]["schema"]["type"]
    assert reply["doc"] == table.ops["add"].doc
    json.dumps(reply)  # the reply is JSON as it stands


def test_an_optional_argument_takes_null_and_keeps_its_kinds_enum(table):
    args = {a["name"]: a for a in openapi.op_description(table.ops["sum"])["overloads"][0]["args"]}
    (dtype, null) = args["dtype"]["schema"]["anyOf"]
    assert "float32" in dtype["enum"] and null == {"type": "null"} and args["dtype"]["schema"]["default"] is None
    assert args["keepdim"]["schema"] == {"type": "boolean", "default": False}


def test_the_document_stays_small_however_many_ops_the_table_holds(table):
    assert len(json.dumps(openapi.document(ROUTES, table))) < 200_000


# a word each kind's converter takes (table/kinds.py), as JSON: the kind's schema must accept it
SAMPLES = {"tensor": [[1.0, 2.0], "tensor://k3f00012", 2], "scalar": [0.5, 3], "int": [2], "float": [0.5, 1],
           "bool": [True], "str": ["mean"], "dtype": ["float32", "int64"], "device": ["cpu", "cuda:0", 0],
           "layout": ["strided"], "memory_format": ["contiguous_format"], "int_list": [[2, 3], 4],
           "float_list": [[0.5, 1.0], 2.0], "bool_list": [[True, False]], "str_list": [["a", "b"], "a,b"],
           "path": ["data.csv"], "handle": ["nn://k3f00012"], "json": [{"lr": 0.1}, [1, 2]]}


def test_every_kind_schema_compiles_under_json_schema_and_accepts_the_words_its_converter_takes():
    jsonschema_rs = pytest.importorskip("jsonschema_rs")  # schemathesis's own validator (the test extra)
    for name in KINDS:
        check = jsonschema_rs.validator_for(openapi.kind_schema(name))  # raises on a malformed schema
        for value in SAMPLES.get(name, ()):
            assert check.is_valid(value), (name, value)
    assert not jsonschema_rs.validator_for(openapi.kind_schema("dtype")).is_valid("float33")
    assert not jsonschema_rs.validator_for(openapi.kind_schema("int")).is_valid(0.5)
