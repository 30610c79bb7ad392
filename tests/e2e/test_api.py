"""The JSON face: /v1/ops, /v1/tensors (.npy bodies), /v1/status, /v1/openapi.json, on one kept-alive connection."""
import io
import json

import numpy as np
import pytest
import torch
from support.apicall import UnixHTTPConnection


@pytest.fixture
def api(sh):
    conn = UnixHTTPConnection(sh.socket)

    def call(method, path, body=None, raw=False):
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        conn.request(method, path, body=data)
        r = conn.getresponse()
        payload = r.read()
        return r.status, payload if raw else json.loads(payload or b"null")
    yield call
    conn.close()


def test_ops_take_tensors_args_and_kwargs(api):
    status, a = api("POST", "/v1/ops/tensor", {"args": [[1.0, 2.0]]})
    assert status == 200 and a["result"].startswith("tensor://")
    status, out = api("POST", "/v1/ops/add", {"tensors": [a["result"]], "args": [2], "kwargs": {"alpha": 3}})
    assert status == 200
    status, v = api("POST", "/v1/ops/value", {"tensors": [out["result"]]})
    assert v == {"result": [7.0, 8.0]}


def test_named_tuples_keep_their_fields(api):
    _, a = api("POST", "/v1/ops/tensor", {"args": [[[1, 5], [7, 3]]]})
    _, out = api("POST", "/v1/ops/max", {"tensors": [a["result"]], "kwargs": {"dim": 1}})
    assert set(out["result"]) == {"values", "indices"}


def test_errors_are_json_with_stable_codes(api):
    status, err = api("POST", "/v1/ops/nonexistent_op", {})
    assert status == 404 and err["error"]["code"] == "unknown_op"
    status, err = api("POST", "/v1/ops/add", {"tensors": ["tensor://zzz00001", "tensor://zzz00002"]})
    assert status == 410 and err["error"]["code"] == "stale_handle"
    status, err = api("POST", "/v1/ops/add", {"kwargs": {"bogus": 1}})
    assert status == 400 and err["error"]["code"] == "unknown_flag"
    status, err = api("POST", "/v1/ops/add", b"{not json")
    assert status == 400 and err["error"]["code"] == "bad_request"


def test_npy_upload_and_download_round_trip(api):
    ref = np.arange(12, dtype=np.float64).reshape(3, 4) / 7
    buf = io.BytesIO()
    np.save(buf, ref)
    status, up = api("POST", "/v1/tensors", buf.getvalue())
    assert status == 200
    status, body = api("GET", "/v1/tensors/%s" % up["result"], raw=True)
    assert status == 200 and np.array_equal(np.load(io.BytesIO(body)), ref)
    status, _ = api("DELETE", "/v1/tensors/%s" % up["result"], raw=True)
    assert status == 204
    status, err = api("GET", "/v1/tensors/%s" % up["result"])
    assert status == 404 and err["error"]["code"] == "unknown_handle"


def test_census_and_status(api):
    api("POST", "/v1/ops/ones", {"args": [[2, 2]]})
    status, census = api("GET", "/v1/tensors")
    assert status == 200 and any(r.get("shape") == [2, 2] for r in census["objects"] if r["kind"] == "tensor")
    status, st = api("GET", "/v1/status")
    assert status == 200 and st["objects"]["tensor"] >= 1 and st["pid"] > 0


def test_openapi_document_matches_the_checked_in_copy(api):
    import pathlib
    status, doc = api("GET", "/v1/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    assert "/v1/ops/{op}" in doc["paths"] and "/v1/cli" in doc["paths"]
    copy = pathlib.Path(__file__).parents[2] / "docs" / "openapi.json"
    assert json.loads(copy.read_text()) == doc, "docs/openapi.json is stale: run tools/regen.py"


def test_unknown_endpoint_and_wrong_method(api):
    assert api("GET", "/v2/nothing")[0] == 404
    assert api("DELETE", "/v1/status")[0] == 405


def test_results_equal_in_process(api):
    torch.manual_seed(3)
    x = torch.randn(4, 4)
    buf = io.BytesIO()
    np.save(buf, x.numpy())
    _, up = api("POST", "/v1/tensors", buf.getvalue())
    _, out = api("POST", "/v1/ops/linalg.qr", {"tensors": [up["result"]]})
    q = out["result"]["Q"]
    _, body = api("GET", "/v1/tensors/%s" % q, raw=True)
    assert torch.equal(torch.from_numpy(np.load(io.BytesIO(body))), torch.linalg.qr(x).Q)


def test_block_forms_need_exec_and_open_no_scope_otherwise(api):
    _, before = api("GET", "/v1/status")
    status, err = api("POST", "/v1/ops/scope", {"kwargs": {"command": ["true"]}})
    assert status == 409 and err["error"]["code"] == "needs_client"  # lists no exec (protocol.REPLIES): nothing runs
    _, after = api("GET", "/v1/status")
    assert after["scopes"] == before["scopes"]
    status, reply = api("POST", "/v1/ops/scope", {"kwargs": {"command": ["true"]}, "exec": True})
    assert status == 200 and "TORCHSH_SCOPE" in reply["exec"]["env"]
    scope_id = reply["exec"]["env"]["TORCHSH_SCOPE"]
    assert reply["exec"]["then"] == {"op": "scope.end", "args": [scope_id]}
    api("POST", "/v1/ops/scope.end", {"args": [scope_id]})
