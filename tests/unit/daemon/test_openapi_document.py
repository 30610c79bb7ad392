"""api/openapi.document is built from what it is handed: the route table and the op table."""
from torchsh.api import openapi
from torchsh.daemon.routes import ROUTES
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
    assert set(openapi.document(ROUTES, table)["paths"]) == {openapi._openapi_path(p) for _, p, _, _ in ROUTES}


def test_the_op_path_parameter_says_how_many_ops_the_table_handed_in_holds():
    table = build_table()[0]
    doc = openapi.document(ROUTES, table)
    (param,) = [p for p in doc["paths"]["/v1/ops/{op}"]["post"]["parameters"] if p["name"] == "op"]
    assert "%d ops and verbs" % len(table) in param["description"]
