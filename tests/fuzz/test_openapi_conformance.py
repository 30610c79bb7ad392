"""docs/openapi.json says exactly what the daemon accepts (issue 23) and answers (issue 35): schemathesis draws
schema-valid and schema-violating cases for every path and method, and its positive and negative data checks
hold: a schema-valid request is answered (or refused for what it asks: an unknown handle, an op's arguments),
never refused as malformed; a schema-violating one is refused. Every reply has a status the document declares
for its route and that status's shape (V2's errors are V2's, torchsh's are torchsh's) and headers. Against a
daemon of the test's own, serving a model (the V2 routes) and holding staged files (/v1/files).

Where the document cannot say everything, the check says what it leaves to the daemon: POST
/v1/ops/{op}'s arguments are per op (GET /v1/ops/{op} gives their schemas), so a schema-valid body may
be refused as the op's usage (400, 422, …) but never as `bad_request`. A handle of an earlier daemon is
410 Gone: a well-formed request about an object that is no more, as 404 is.

TORCHSH_SCHEMA_CASES (default 500) cases per mode, about 25 s on 2 cores (2,000 a mode passed too). Every
mismatch is collected, not only the first: the assertion says how many cases ran and which failed.
"""
import json
import os

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.config import SchemathesisConfig  # noqa: E402
from schemathesis.core.failures import Failure, FailureGroup  # noqa: E402
from schemathesis.specs.openapi.checks import (negative_data_rejection, positive_data_acceptance,  # noqa: E402
                                               response_headers_conformance, response_schema_conformance,
                                               status_code_conformance)

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
[[operations]]
include-path-regex = "/infer$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404", "413", "422", "429", "503"]
checks.negative_data_rejection.expected-statuses = ["400", "404", "413", "422", "429", "5xx"]
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


CHECKS = [not_a_server_error, positive_data_acceptance, negative_data_rejection, never_refused_as_malformed,
          status_code_conformance, response_schema_conformance, response_headers_conformance]
MODEL = "fuzzed"  # the model the daemon serves: the V2 routes' {name}, drawn as often as any other


def _strategies(schema, mode, op_names, staged):
    """A strategy per operation, and per one with a path parameter the daemon holds values for (ops, the served
    model, staged files), one drawing those values (as often as any other route: one_of flattens)."""
    out = []
    for result in schema.get_all_operations():
        operation = result.ok()
        out.append(operation.as_strategy(generation_mode=mode))
        if operation.path == "/v1/ops/{op}" and operation.method.upper() == "POST":
            held = [{"op": name} for name in op_names]
        elif "{name}" in operation.path:
            held = [{"name": MODEL}]
        elif operation.path == "/v1/files/{id}":
            held = [{"id": stage_id} for stage_id in staged]
        else:
            continue
        named = [operation.as_strategy(generation_mode=mode, path_parameters=params) for params in held]
        out.append(st.sampled_from(named).flatmap(lambda s: s))
    return out


def test_the_daemon_accepts_what_its_openapi_document_allows_and_refuses_what_it_forbids(fresh_sh):
    sh = fresh_sh(start=False)
    sh("TORCHSH_MAX_MEMORY=1G torch daemon start")  # an op asked for a huge result is refused, not run
    session = openapi_media.session(sh.socket)
    pid = session.get(openapi_media.BASE + "/v1/status").json()["pid"]
    openapi_media.register(openapi_media.export_bundle(session))
    ops = session.get(openapi_media.BASE + "/v1/ops").json()["ops"]
    op_names = sorted(o["name"] for o in ops if not o["verb"] and o["category"] in OP_CATEGORIES)[::8]
    sh("torch serve $(torch nn linear 4 3) --name %s --detach" % MODEL)
    staged = [session.post(openapi_media.BASE + "/v1/files?name=f%d.txt" % i, data=b"x").text for i in range(4)]
    schema = schemathesis.openapi.from_path(DOC, config=SchemathesisConfig.from_str(CONFIG))
    cases, mismatches = [], {}
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        @settings(max_examples=CASES, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                  phases=["explicit", "generate"])
        @given(case=st.one_of(_strategies(schema, mode, op_names, staged)))
        def run(case):
            response = case.call(session=session, base_url=openapi_media.BASE)
            cases.append(case.operation.label)
            try:
                case.validate_response(response, checks=CHECKS)
            except (Failure, FailureGroup) as e:  # every check's failure is counted and shown, not the first alone
                for failure in getattr(e, "exceptions", [e]):
                    where = "%s: %s" % (case.operation.label, getattr(failure, "title", type(failure).__name__))
                    first, n = mismatches.get(where, (str(failure)[:600], 0))
                    mismatches[where] = (first, n + 1)
        run()
    print("schemathesis: %d cases over %d operations, %d mismatches" % (
        len(cases), len(set(cases)), sum(n for _, n in mismatches.values())))
    assert not mismatches, "%d cases, mismatches:\n%s" % (len(cases), "\n".join(
        "%s (x%d): %s" % (where, n, first) for where, (first, n) in sorted(mismatches.items())))
    assert session.get(openapi_media.BASE + "/v1/status").json()["pid"] == pid
    assert {label.split(" ", 1)[1] for label in cases} >= {"/v2/models/{name}/versions/{version}/infer",
                                                          "/v1/files/{id}", "/v2/models/{name}/ready"}
