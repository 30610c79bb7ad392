"""api/openapi.document is built from what it is handed: the route table and the op table. Every path is an
OpenAPI template whose parameters are declared (a route's optional group makes two), and the V2 routes declare
V2's own error shape at each status their handlers answer."""
import re

from torchsh.api import openapi
from torchsh.daemon.routes import ROUTES
from torchsh.errors import TorchshError
from torchsh.serve import batcher
from torchsh.table import build_table


def _handler(app, request, params):
    return None


def test_every_route_handed_in_is_a_path_of_the_document_and_nothing_else():
    table = build_table()[0]
    routes = [("GET", r"/v1/things/(?P<handle>[a-z]+://\w+)", _handler, "one thing"),
              ("POST", r"/v1/ops/(?P<op>[\w.]+)", _handler, "run an op")]
    doc = openapi.document(routes, table)
    assert sorted(doc["paths"]) == ["/v1/ops/{op}", "/v1/things/{handle}"]
    assert doc["paths"]["/v1/things/{handle}"]["get"]["summary"] == "one thing"
    assert set(openapi.document(ROUTES, table)["paths"]) == {path for _, p, _, _ in ROUTES
                                                             for path, _ in openapi.openapi_paths(p)}


def test_every_path_is_a_template_whose_parameters_are_declared_with_their_routes_pattern():
    doc = openapi.document(ROUTES, build_table()[0])
    assert {"/v1/files/{id}", "/v2/models/{name}", "/v2/models/{name}/versions/{version}",
            "/v2/models/{name}/versions/{version}/infer"} <= set(doc["paths"])
    ids = []
    for path, methods in doc["paths"].items():
        assert not set("()?\\") & set(path), path  # no regex left in a template
        for op in methods.values():
            ids.append(op["operationId"])
            declared = {p["name"]: p for p in op.get("parameters", []) if p["in"] == "path"}
            assert set(declared) == set(re.findall(r"{(\w+)}", path)), (path, sorted(declared))
            for name, param in declared.items():
                assert param["required"] and param["description"]
                routed = next(p for m, p, _, _ in ROUTES if path in dict(openapi.openapi_paths(p)))
                assert param["schema"]["pattern"] == "^(?:%s)$" % dict(openapi.openapi_paths(routed))[path][name]
                assert "(?P<%s>%s)" % (name, dict(openapi.openapi_paths(routed))[path][name]) in routed
    assert len(ids) == len(set(ids))  # operation ids are unique in a document


def _v2_codes(schema):
    """The codes a status's V2 error schema allows (V2Error, its code narrowed), through a 404's anyOf."""
    (v2,) = [s for s in schema.get("anyOf", [schema]) if s.get("allOf") == [{"$ref": "#/components/schemas/V2Error"}]]
    return v2["properties"]["code"]["enum"]


def test_v2_routes_declare_v2s_error_shape_at_each_status_their_handler_answers():
    doc = openapi.document(ROUTES, build_table()[0])
    infer = doc["paths"]["/v2/models/{name}/versions/{version}/infer"]["post"]["responses"]
    assert sorted(infer) == ["200", "400", "404", "413", "422", "429", "501", "503", "507", "default"]
    for code in ("bad_argument", "unknown_model", "too_large", "torch_error", "queue_full", "not_serving",
                 "dtype_error", "shape_mismatch", "out_of_memory", "not_supported"):
        status, body, headers = batcher.failure(TorchshError(code, "what went wrong", "what to do"))
        assert set(body) == set(doc["components"]["schemas"]["V2Error"]["required"]) and isinstance(body["error"], str)
        assert body["code"] in _v2_codes(infer[str(status)]["content"]["application/json"]["schema"])
        assert set(infer[str(status)].get("headers", {})) == set(headers or {})
    assert sorted(doc["paths"]["/v2/models/{name}/ready"]["get"]["responses"]) == ["200", "404", "503", "default"]
    assert sorted(doc["paths"]["/v2/health/live"]["get"]["responses"]) == ["200", "default"]


def test_the_op_path_parameter_says_how_many_ops_the_table_handed_in_holds():
    table = build_table()[0]
    doc = openapi.document(ROUTES, table)
    (param,) = [p for p in doc["paths"]["/v1/ops/{op}"]["post"]["parameters"] if p["name"] == "op"]
    assert "%d ops and verbs" % len(table) in param["description"]
