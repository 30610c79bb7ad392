"""Every failure the fuzzers of issue 10 found is a stable code with a one-line message, never internal_error.

One test per family, for arguments and requests: huge integers, ragged or mixed JSON, 5,000-deep JSON,
JSON-API type confusion, CUDA/MPS on a CPU build, a word over the size limit, lazy modules in the census,
PyTorch's own assert and arithmetic checks, inputs on which PyTorch never returns. Files (saves into
missing or read-only folders, corrupt files, .npy headers that lie, pickles, a .pt posted as .npy, a FIFO
given to load, failing saves that must leave no temp file): test_structured_errors_files.py.
"""
import json

import pytest
import torch

from support.structured import UnixHTTPConnection, api, cli, code_of as _code, one_line as _line


def test_huge_integers_are_bad_arguments_naming_the_range(sh):
    for script in ("torch abs 99999999999999999999999",
                   "torch ones '[99999999999999999999999]'",
                   "a=$(torch ones '[2]'); torch sum $a 99999999999999999999999",
                   "a=$(torch ones '[2]'); torch add $a -99999999999999999999999",
                   "torch ones '[2]' --device 99999999999999999999",
                   "torch abs %s" % ("9" * 5000)):
        code, line = _line(sh, script)
        assert (code, _code(line)) == (2, "bad_argument"), (script, line)
        assert "out of range" in line and len(line) < 400, line


def test_ragged_and_mixed_json_are_bad_arguments(sh):
    for script in ("torch tensor '[[1,2],[3]]'", "torch tensor '[1,\"a\"]'", "torch abs '[[1,2],[3]]'",
                   "torch abs '[1,\"a\"]'", "a=$(torch ones '[2]'); torch add $a '[[1],[2,3]]'",
                   "torch abs '[{\"a\":1}]'"):
        code, line = _line(sh, script)
        assert (code, _code(line)) == (2, "bad_argument"), (script, line)


def test_5000_deep_json_is_refused_as_an_argument_and_as_an_api_body(sh):
    deep = "[" * 5000 + "]" * 5000
    for op in ("tensor", "abs", "sum"):
        code, line = _line(sh, "torch %s '%s'" % (op, deep))
        assert code == 2 and _code(line) in ("bad_argument", "usage"), line
        assert len(line) < 600, line
    status, err = api(sh, "/v1/ops/tensor", deep.encode())
    assert status == 400 and err["error"]["code"] == "bad_request" and "nested" in err["error"]["message"]
    status, err = api(sh, "/v1/ops/tensor", b'{"args":[' + deep.encode() + b']}')
    assert status == 400 and err["error"]["code"] == "bad_request"
    status, err = api(sh, "/v1/ops/tensor", {"args": [json.loads("[" * 99 + "]" * 99)]})
    assert status == 400 and err["error"]["code"] == "bad_request"  # the body as a whole is over 100 levels


@pytest.mark.parametrize("body", [
    {"args": [1], "kwargs": [1]}, {"tensors": "x"}, {"args": {"a": 1}}, {"args": "abc"}, {"kwargs": "x"},
    {"env": {"TORCHSH_NO_GRAD": [1]}}, {"env": [1]}, {"env": "x"}, {"cwd": 5}, {"cwd": ["/"]},
    {"tensors": {"a": 1}}, {"tensors": 7},
])
def test_json_api_type_confusion_is_bad_request(sh, body):
    status, err = api(sh, "/v1/ops/abs", body)
    assert status == 400 and err["error"]["code"] == "bad_request", (body, err)


def test_json_api_odd_values_are_structured(sh):
    for op, body in (("abs", {"args": [[1, "a"]]}), ("abs", {"args": [10 ** 30]}), ("ones", {"args": [[10 ** 30]]}),
                     ("ones", {"args": [[2]], "kwargs": {"device": "cuda:99999999999999999999"}}),
                     ("ones", {"args": [[2]], "env": {"TORCHSH_DEVICE": "bogus"}}),
                     ("ones", {"args": [[2]], "env": {"TORCHSH_DEVICE": "cuda"}})):
        status, err = api(sh, "/v1/ops/" + op, body)
        assert err["error"]["code"] in ("bad_argument", "device_error"), (op, body, err)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_and_mps_on_a_cpu_build_are_device_errors_naming_the_devices(sh):
    for device in ("cuda", "cuda:1", "mps"):
        code, line = _line(sh, "torch ones '[2]' --device %s" % device)
        assert (code, _code(line)) == (4, "device_error"), line
        assert "devices here: cpu" in line and "CPU-only build" in line
    code, line = _line(sh, "TORCHSH_DEVICE=cuda torch zeros '[2]'")
    assert _code(line) == "device_error" and "cuda" in line.lower()
    code, line = _line(sh, "torch ones '[2]' --device cuda")
    assert "install a CUDA build" in line


def test_a_word_over_256_kib_is_too_large_before_parsing(sh):
    code, err = cli(sh, "tensor", "[" + "1," * (512 * 1024) + "1]")
    assert code == 2 and "[too_large]" in err and "256 KiB" in err and len(err) < 400, err
    code, err = cli(sh, "add", "x" * (1 << 20), "1")
    assert code == 2 and "[too_large]" in err, err
    code, err = cli(sh, "tensor", "[" + "1," * 1000 + "1]")  # big but legal
    assert code == 0, err


def test_a_lazy_module_does_not_break_the_census_or_status(sh):
    m = sh("torch nn lazy_linear 3")
    p, q = sh("torch nn parameters %s" % m).split()
    try:
        assert m in sh("torch tensors")
        assert "objects:" in sh("torch daemon status")
        conn = UnixHTTPConnection(sh.socket)
        for path in ("/v1/status", "/v1/tensors"):
            conn.request("GET", path)
            r = conn.getresponse()
            body = json.loads(r.read())
            assert r.status == 200, body
        conn.close()
        rows = {row["handle"]: row for row in body["objects"]}
        assert rows[m]["parameters"] == 0 and rows[m]["uninitialized"] == 2
        assert rows[p]["shape"] is None and rows[p]["bytes"] == 0
    finally:
        sh("torch free %s %s %s" % (m, p, q))


def test_argument_checks_pytorch_makes_with_assert_or_arithmetic_are_structured(sh):
    """PyTorch's meta kernels and Python linalg code check arguments with AssertionError, and GroupNorm
    divides by its argument; that is the caller's mistake (exit 4 with PyTorch's message), not a bug."""
    code, line = _line(sh, "torch nn group_norm 0 8")
    assert (code, _code(line)) == (4, "torch_error") and "modulo by zero" in line, line
    m = sh("torch ones '[2]' --device meta")
    for script in ("torch inverse %s" % m, "torch linalg eigvalsh %s" % m, "torch lobpcg '[[4.5,0,4.5]]'",
                   "torch nn functional embedding %s 1e-320" % m):
        code, line = _line(sh, script)
        assert code == 4 and _code(line) in ("torch_error", "shape_mismatch"), (script, line)
        assert "must" in line, line


def test_inputs_on_which_pytorch_never_returns_are_refused_and_the_daemon_goes_on(sh):
    """torch.binomial with a NaN count and a 2**62-layer stack never return in PyTorch 2.13; under the one
    tensor lock that would wedge every shell. Found by tests/fuzz; refused by torchsh.guards."""
    count = sh("torch tensor '[NaN, 3.0]'")
    prob = sh("torch full '[2]' 0.5")
    r = sh.run("torch binomial %s %s" % (count, prob), timeout=60)
    assert r.code == 2 and "[bad_argument]" in r.err and "NaN" in r.err, r.err
    layer = sh("torch nn transformer_decoder_layer 8 2")
    for script in ("torch nn transformer_decoder %s %d" % (layer, 2 ** 62), "torch nn lstm 2 3 %d" % 2 ** 40):
        r = sh.run(script, timeout=60)
        assert r.code == 2 and "[bad_argument]" in r.err and "layers" in r.err, (script, r.err)
    fine = sh("torch binomial $(torch full '[2]' 4.0) %s" % prob)  # finite counts still sample
    assert sh("torch value %s --meta" % fine)
    # the guard reads no values of a meta tensor (it has none): PyTorch's own answer, never internal_error
    r = sh.run("torch binomial $(torch ones 2 --device meta) '[true,1.5]'")
    assert "[internal_error]" not in r.err and (r.code == 0 or r.err.count("\n") == 1), r.err


def test_meshgrid_of_a_matrix_is_refused_as_pytorch_refuses_it_without_printing_the_tensor(sh):
    """PyTorch refuses meshgrid of a 2-D tensor only after printing the whole tensor into its message (51 s
    for 10^8 elements, found by the MCP fuzz); torchsh.guards refuses it first, with the same class of code."""
    big = sh("torch zeros 3000 3000")
    r = sh.run("torch meshgrid %s" % big, timeout=60)
    assert r.code == 4 and r.err.endswith("[shape_mismatch]\n") and "[3000, 3000]" in r.err, r.err
    assert len(r.err) < 300 and r.err.count("\n") == 1
    assert sh("torch meshgrid $(torch zeros 3) $(torch zeros 2) --indexing ij")  # 1-D tensors still grid
