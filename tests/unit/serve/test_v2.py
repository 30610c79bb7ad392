"""The KServe V2 JSON conversions (serve/v2.py) and the latency percentiles (serve/metrics.py): pure parts."""
import json
import struct

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
    out = v2.infer_response("m", request, [("output__0", (1, 2), "FP32", [0.5, 1.5]),
                                           ("output__1", (1,), "INT64", [3])])
    assert out == {"model_name": "m", "id": "r7",
                   "outputs": [{"name": "output__1", "datatype": "INT64", "shape": [1], "data": [3]}]}
    request.outputs = ("nope",)
    with pytest.raises(TorchshError, match="no output named nope"):
        v2.infer_response("m", request, [("output__0", (1, 2), "FP32", [0.5, 1.5])])


def test_percentiles_are_nearest_rank_in_milliseconds():
    ordered = [i / 1000 for i in range(1, 101)]
    assert metrics.percentile(ordered, 50) == 50.0 and metrics.percentile(ordered, 99) == 99.0
    assert metrics.percentile([], 50) is None


def binary_body(inputs, raw, **extra):
    """(body, Inference-Header-Content-Length) of a binary-extension request: the JSON header, then raw."""
    header = json.dumps(dict(inputs=inputs, **extra)).encode()
    return header + raw, str(len(header))


def parse_binary(inputs, raw, **extra):
    body_bytes, length = binary_body(inputs, raw, **extra)
    return v2.parse_infer(body_bytes, 100, length)


def test_binary_inputs_read_as_their_json_data_would():
    for datatype, fmt, values in (("FP32", "<3f", [0.5, -1.5, 2.0]), ("INT64", "<3q", [1, -2, 3]),
                                  ("FP16", "<3e", [0.5, -1.5, 2.0]), ("BOOL", "<3B", [1, 0, 1]),
                                  ("INT32", "<3i", [7, -8, 9])):
        raw = struct.pack(fmt, *values)
        parsed = parse_binary([{"name": "x", "shape": [1, 3], "datatype": datatype,
                               "parameters": {"binary_data_size": len(raw)}}], raw)
        as_json = v2.parse_infer(body({"name": "x", "shape": [1, 3], "datatype": datatype, "data": values}), 100)
        assert parsed.inputs[0].values == as_json.inputs[0].values and parsed.signature() == as_json.signature()


def test_binary_and_json_inputs_mix_in_input_order():
    raw = struct.pack("<2f", 1, 2) + struct.pack("<2q", 3, 4)
    parsed = parse_binary([
        {"name": "a", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
        {"name": "j", "shape": [1, 1], "datatype": "INT8", "data": [5]},
        {"name": "b", "shape": [1, 2], "datatype": "INT64", "parameters": {"binary_data_size": 16}}], raw)
    assert [list(i.values) for i in parsed.inputs] == [[1.0, 2.0], [5], [3, 4]]


X4 = [{"name": "x", "shape": [1, 4], "datatype": "FP32", "parameters": {"binary_data_size": 16}}]


@pytest.mark.parametrize("make, words", [
    (lambda: (binary_body(X4, b"\0" * 16)[0], "12x"), "not a length"),
    (lambda: (binary_body(X4, b"\0" * 16)[0], "99999"), "not a length"),
    (lambda: (binary_body(X4, b"\0" * 16)[0], "-1"), "not a length"),
    (lambda: binary_body(X4, b"\0" * 12), "runs past"),
    (lambda: binary_body(X4, b"\0" * 20), "add up to 16 bytes, but 20"),
    (lambda: binary_body([dict(X4[0], parameters={"binary_data_size": 12})], b"\0" * 12), "takes 16 bytes"),
    (lambda: binary_body([dict(X4[0], parameters={"binary_data_size": "16"})], b"\0" * 16), "takes 16 bytes"),
    (lambda: binary_body([dict(X4[0], data=[1, 2, 3, 4])], b"\0" * 16), "one or the other"),
    (lambda: (binary_body(X4, b"")[0], None), "no Inference-Header-Content-Length"),
    (lambda: (b"\xff" + binary_body(X4, b"\0" * 16)[0], "3"), "inference header is not JSON"),
    (lambda: binary_body(X4, b"\0" * 16, outputs=[{"name": "o", "parameters": {"binary_data": 1}}]), "true or false"),
    (lambda: binary_body(X4, b"\0" * 16, parameters=[]), "is an object"),
])
def test_a_malformed_binary_request_is_refused_saying_what_is_wrong(make, words):
    body_bytes, length = make()
    with pytest.raises(TorchshError) as e:
        v2.parse_infer(body_bytes, 100, length)
    assert e.value.code == "bad_argument" and words in e.value.message


def test_outputs_asked_for_raw_come_back_as_bytes_after_the_json_header():
    raw = struct.pack("<4f", 1, 2, 3, 4)
    request = parse_binary(X4, raw, outputs=[{"name": "output__0", "parameters": {"binary_data": True}},
                                             {"name": "output__1"}])
    assert request.binary_output("output__0") and not request.binary_output("output__1")
    out = v2.infer_response("m", request, [("output__0", (1, 2), "FP32", struct.pack("<2f", 0.5, 1.5)),
                                           ("output__1", (1,), "INT64", [3])])
    assert isinstance(out, v2.BinaryReply) and out.tail == struct.pack("<2f", 0.5, 1.5)
    assert out.header["outputs"] == [
        {"name": "output__0", "datatype": "FP32", "shape": [1, 2], "parameters": {"binary_data_size": 8}},
        {"name": "output__1", "datatype": "INT64", "shape": [1], "data": [3]}]
    every = v2.parse_infer(body({"name": "x", "shape": [1, 1], "datatype": "FP32", "data": [1]},
                                parameters={"binary_data_output": True}), 100)
    assert every.binary_output("output__3") and not v2.parse_infer(body(
        {"name": "x", "shape": [1, 1], "datatype": "FP32", "data": [1]}), 100).binary_output("output__0")


def test_a_request_reads_as_pythons_json_reads_it_floats_bit_for_bit_and_nan_and_big_integers_too():
    import random
    rng = random.Random(0)
    floats = [rng.uniform(-1e3, 1e3) for _ in range(500)] + [5e-324, 1.7976931348623157e308, -0.0, 0.1]
    for text in (body({"name": "x", "shape": [1, len(floats)], "datatype": "FP64", "data": floats}).decode(),
                 '{"inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [NaN, Infinity, -Infinity]}]}',
                 '{"a": 123456789012345678901234567890, "b": [1e400]}'):
        mine, theirs = v2.loads(text.encode()), json.loads(text)
        assert json.dumps(mine) == json.dumps(theirs)  # NaN compares unequal; its text does not
    parsed = v2.parse_infer(body({"name": "x", "shape": [1, len(floats)], "datatype": "FP64", "data": floats}), 1000)
    assert [struct.pack("<d", v) for v in parsed.inputs[0].values] == [struct.pack("<d", v) for v in floats]
