"""docs/openapi.json says exactly what the daemon accepts (issue 23): schemathesis draws schema-valid and
schema-violating cases for every path and method, and its positive and negative data checks hold:
a schema-valid request is answered (or refused for what it asks: an unknown handle, an op's arguments),
never refused as malformed; a schema-violating one is refused. Against a daemon of the test's own.

Where the document cannot say everything, the check says what it leaves to the daemon: POST
/v1/ops/{op}'s arguments are per op (GET /v1/ops/{op} gives their schemas), so a schema-valid body may
be refused as the op's usage (400, 422, …) but never as `bad_request`. A handle of an earlier daemon is
410 Gone: a well-formed request about an object that is no more, as 404 is.

TORCHSH_SCHEMA_CASES (default 500) cases per mode, about 25 s on 2 cores (2,000 a mode passed too).
"""
import json
import os

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.config import SchemathesisConfig  # noqa: E402
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance  # noqa: E402

import openapi_media  # noqa: E402

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "openapi.json")
CASES = int(os.environ.get("TORCHSH_SCHEMA_CASES", "500"))
CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "410", "429", "5xx"]
[[operations]]
include-path = "/v1/ops/{op}"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404", "409", "410", "413", "416", "422", "501", "507"]
"""
# Ops drawn by name besides the schema's own draws (mostly unknown names): PyTorch's, which read no file
OP_CATEGORIES = ("pointwise", "shape", "reduction", "comparison", "activation", "creation", "linalg", "special")


def never_refused_as_malformed(ctx, response, case):
    """A schema-valid request may be refused for what it asks, never as a malformed request."""
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code < 400:
        return None
    try:
        code = json.loads(response.content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    assert code != "bad_request", "a schema-valid request was refused as malformed: %s" % response.content[:300]
    return None


CHECKS = [not_a_server_error, positive_data_acceptance, negative_data_rejection, never_refused_as_malformed]


def _strategies(schema, mode, op_names):
    out = []
    for result in schema.get_all_operations():
        operation = result.ok()
        out.append(operation.as_strategy(generation_mode=mode))
        if operation.path == "/v1/ops/{op}" and operation.method.upper() == "POST":
            named = [operation.as_strategy(generation_mode=mode, path_parameters={"op": name}) for name in op_names]
            out.append(st.sampled_from(named).flatmap(lambda s: s))  # as often as any other route (one_of flattens)
    return out


def test_the_daemon_accepts_what_its_openapi_document_allows_and_refuses_what_it_forbids(fresh_sh):
    sh = fresh_sh(start=False)
    sh("TORCHSH_MAX_MEMORY=1G torch daemon start")  # an op asked for a huge result is refused, not run
    session = openapi_media.session(sh.socket)
    pid = session.get(openapi_media.BASE + "/v1/status").json()["pid"]
    openapi_media.register(openapi_media.export_bundle(session))
    ops = session.get(openapi_media.BASE + "/v1/ops").json()["ops"]
    op_names = sorted(o["name"] for o in ops if not o["verb"] and o["category"] in OP_CATEGORIES)[::8]
    schema = schemathesis.openapi.from_path(DOC, config=SchemathesisConfig.from_str(CONFIG))
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        @settings(max_examples=CASES, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                  phases=["explicit", "generate"])
        @given(case=st.one_of(_strategies(schema, mode, op_names)))
        def run(case):
            response = case.call(session=session, base_url=openapi_media.BASE)
            case.validate_response(response, checks=CHECKS)
        run()
    assert session.get(openapi_media.BASE + "/v1/status").json()["pid"] == pid
