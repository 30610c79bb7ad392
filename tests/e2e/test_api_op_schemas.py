"""GET /v1/ops/{op} gives each argument's JSON schema (its kind's, from table/kinds.py), and the served
OpenAPI document names every kind a reply's `kind` refers to."""
import json

import torch
from support.apicall import UnixHTTPConnection


def _get(conn, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body).encode())
    r = conn.getresponse()
    return r.status, json.loads(r.read())


def test_get_op_gives_each_argument_its_schema_and_a_value_that_fits_it_runs(sh):
    conn = UnixHTTPConnection(sh.socket)
    try:
        status, add = _get(conn, "GET", "/v1/ops/add")
        assert status == 200
        alpha = [a for ov in add["overloads"] for a in ov["args"] if a["name"] == "alpha"]
        assert alpha and all(a["schema"]["type"] == "number" and a["schema"]["default"] == 1 for a in alpha)
        _, doc = _get(conn, "GET", "/v1/openapi.json")
        kinds = {a["kind"] for ov in add["overloads"] for a in ov["args"]}
        assert {"kind." + k for k in kinds} <= set(doc["components"]["schemas"])
        _, x = _get(conn, "POST", "/v1/ops/tensor", {"args": [[1.0, 2.0]]})
        _, out = _get(conn, "POST", "/v1/ops/add", {"tensors": [x["result"]], "args": [1], "kwargs": {"alpha": 0.5}})
        _, value = _get(conn, "POST", "/v1/ops/value", {"tensors": [out["result"]]})
        assert value["result"] == torch.add(torch.tensor([1.0, 2.0]), 1, alpha=0.5).tolist()
    finally:
        conn.close()
