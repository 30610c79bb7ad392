"""The KServe V2 JSON conversions (serve/v2.py) and the latency percentiles (serve/metrics.py): pure parts."""
import json

import pytest

from torchsh.errors import TorchshError
from torchsh.serve import metrics, v2


def body(*inputs, **extra):
    return json.dumps(dict(inputs=list(inputs), **extra)).encode()


def test_flat_and_nested_data_read_as_the_same_row_major_values():
    flat = v2.parse_infer(body({"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]}), 100)
    nested = v2.parse_infer(body({"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2], [3, 4]]}), 100)
    assert list(flat.inputs[0].values) == list(nested.inputs[0].values) == [1.0, 2.0, 3.0, 4.0]
    assert flat.inputs[0].rows() == 2 and flat.signature() == (("FP32", (2,)),)


def test_each_datatype_reads_into_its_array_type():
    for datatype, data in (("BOOL", [True, False]), ("INT64", [1, -2]), ("UINT8", [0, 255]), ("FP64", [0.5, 1.5])):
        parsed = v2.parse_infer(body({"name": "x", "shape": [1, 2], "datatype": datatype, "data": data}), 100)
        assert list(parsed.inputs[0].values) == [int(v) if datatype != "FP64" else v for v in data]


@pytest.mark.parametrize("doc, words", [
    ({"inputs": []}, "non-empty"),
    ({"inputs": [{"name": "x", "shape": [1, 2], "datatype": "BYTES", "data": ["a", "b"]}]}, "not served"),
    ({"inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1, 2]}]}, "needs 3 values"),
    ({"inputs": [{"name": "x", "shape": [1, 2], "datatype": "INT32", "data": [1.5, 2]}]}, "not INT32"),
    ({"inputs": [{"name": "x", "shape": [], "datatype": "FP32", "data": [1]}]}, "batch"),
    ({"inputs": [{"name": "x", "shape": [1, "2"], "datatype": "FP32", "data": [1, 2]}]}, "list of sizes"),
])
def test_a_bad_request_is_refused_saying_what_is_wrong(doc, words):
    with pytest.raises(TorchshError) as e:
        v2.parse_infer(json.dumps(doc).encode(), 100)
    assert e.value.code == "bad_argument" and words in e.value.message


def test_not_json_and_over_the_element_budget_are_refused():
    with pytest.raises(TorchshError, match="not JSON"):
        v2.parse_infer(b"{", 100)
    with pytest.raises(TorchshError) as e:
        v2.parse_infer(body({"name": "x", "shape": [10, 11], "datatype": "FP32", "data": [0] * 110}), 100)
    assert e.value.code == "too_large"


def test_the_response_names_outputs_and_keeps_the_id_and_those_asked_for():
    request = v2.parse_infer(body({"name": "x", "shape": [1, 1], "datatype": "FP32", "data": [1]}, id="r7",
                                  outputs=[{"name": "output__1"}]), 100)
    out = v2.infer_response("m", request, [((1, 2), "FP32", [0.5, 1.5]), ((1,), "INT64", [3])])
    assert out == {"model_name": "m", "id": "r7",
                   "outputs": [{"name": "output__1", "datatype": "INT64", "shape": [1], "data": [3]}]}
    request.outputs = ("nope",)
    with pytest.raises(TorchshError, match="no output named nope"):
        v2.infer_response("m", request, [((1, 2), "FP32", [0.5, 1.5])])


def test_percentiles_are_nearest_rank_in_milliseconds():
    ordered = [i / 1000 for i in range(1, 101)]
    assert metrics.percentile(ordered, 50) == 50.0 and metrics.percentile(ordered, 99) == 99.0
    assert metrics.percentile([], 50) is None
