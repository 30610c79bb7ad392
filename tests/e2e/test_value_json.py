"""`torch value` prints valid JSON (RFC 8259) that jq and JavaScript read, for every dtype; non-finite
values are the strings "NaN", "Infinity", "-Infinity" (bare with --nan bare), and `torch tensor` reads
them back. The JSON API replies valid JSON too, unless asked ?nan=bare. Issue 11 §5."""
import json
import shutil

import numpy as np
import pytest
import torch
from support.apicall import call

NONFINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def strict_loads(text):
    """Python's json, refusing the bare NaN/Infinity tokens it would otherwise accept."""
    def refuse(token):
        raise ValueError("not JSON: bare %s" % token)
    return json.loads(text, parse_constant=refuse)


def as_floats(value):
    if isinstance(value, list):
        return [as_floats(v) for v in value]
    return NONFINITE.get(value, value) if isinstance(value, str) else value


def real(t):
    """Complex values print as [real, imag] pairs."""
    return torch.view_as_real(t) if t.is_complex() else t


def same(parsed, t):
    """The parsed JSON, read in t's own dtype, equals t bit for bit (NaN where t has NaN)."""
    t = real(t)
    if t.dtype == torch.bool or t.numel() == 0:  # an empty tensor is [] (or [[],[]]), as tolist() says
        return parsed == t.tolist()
    got = torch.tensor(as_floats(parsed), dtype=torch.float64).to(t.dtype)
    return got.shape == t.shape and torch.equal(got.isnan() if got.is_floating_point() else got, t.isnan()
                                                if t.is_floating_point() else t) and \
        torch.equal(got.nan_to_num(), t.nan_to_num())


def samples():
    nonfinite = torch.tensor([[float("nan"), 1.5, -0.0], [float("inf"), -float("inf"), 0.1]], dtype=torch.float64)
    out = {}
    for name in ("float32", "float64", "float16", "bfloat16"):
        out[name] = nonfinite.to(getattr(torch, name))
    out["int64"] = torch.tensor([[1, -2], [3, 2 ** 40]])
    out["int32"] = torch.tensor([7, -8], dtype=torch.int32)
    out["bool"] = torch.tensor([True, False])
    out["complex64"] = torch.tensor([1 + 2j, float("nan") + 0j, complex(float("inf"), -1)], dtype=torch.complex64)
    out["complex128"] = torch.tensor([[0.1 - 0.2j]], dtype=torch.complex128)
    out["0-d float"] = torch.tensor(float("nan"))
    out["0-d int"] = torch.tensor(5)
    out["empty"] = torch.zeros(0, 3)
    out["empty 1-d"] = torch.zeros(0, dtype=torch.int64)
    return out


SAMPLES = samples()


@pytest.mark.parametrize("name", list(SAMPLES))
def test_value_is_valid_json_equal_to_pytorch_for_every_dtype(sh, name):
    t = SAMPLES[name]
    out = sh("torch value %s" % sh.put(t))
    assert same(strict_loads(out), t), out


@pytest.mark.parametrize("name", list(SAMPLES))
def test_jq_and_javascript_read_every_value(sh, name):
    jq, node = shutil.which("jq"), shutil.which("node")
    if not (jq and node):
        pytest.skip("needs jq and node on PATH")
    h = sh.put(SAMPLES[name])
    for flags in ("", "--meta"):
        by_jq = sh("torch value %s %s | jq -c ." % (h, flags))
        by_js = sh("torch value %s %s | node -e 'let s=\"\";process.stdin.on(\"data\",d=>s+=d)"
                   ".on(\"end\",()=>console.log(JSON.stringify(JSON.parse(s))))'" % (h, flags))
        assert strict_loads(by_jq) == strict_loads(by_js) == strict_loads(sh("torch value %s %s" % (h, flags)))


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16", "complex64", "0-d float"])
def test_value_reads_back_bit_for_bit_in_both_nan_forms(sh, name):
    t = SAMPLES[name]
    h = sh.put(t)
    for flags in ("--meta", "--meta --nan bare"):
        back = sh.fetch(sh("torch value %s %s | torch tensor" % (h, flags)))
        assert back.dtype == t.dtype and back.shape == t.shape
        assert torch.equal(back.isnan(), t.isnan()) and torch.equal(back.nan_to_num(), t.nan_to_num())


def test_nan_bare_prints_python_tokens(sh):
    h = sh.put(torch.tensor([float("nan"), float("inf"), -float("inf"), 2.5]))
    assert sh("torch value %s --nan bare" % h) == "[NaN,Infinity,-Infinity,2.5]"
    assert sh("torch value %s" % h) == '["NaN","Infinity","-Infinity",2.5]'
    r = sh.run("torch value %s --nan quiet" % h)
    assert r.code == 2 and "[bad_argument]" in r.err and "bare" in r.err


def test_nonfinite_strings_are_floats_only_in_a_numeric_tensor_literal(sh):
    h = sh("""torch tensor '["NaN", 1.0, "-Infinity"]'""")
    assert sh("torch dtype %s" % h) == "float32"
    t = sh.fetch(h)
    assert t.isnan()[0] and t[1] == 1.0 and t[2] == float("-inf")
    # in a tensor slot of any op too
    a = sh.put(torch.tensor([1.0, 2.0]))
    assert sh("""torch add %s '["Infinity", 1]' | torch value""" % a) == '["Infinity",3.0]'
    # any other string is no number, not even a numeric one
    for literal in ('["1.5"]', '["nan0"]', '[1, "x"]'):
        r = sh.run("torch tensor '%s'" % literal)
        assert r.code == 2 and "[bad_argument]" in r.err and "is not a number" in r.err, r.err


def test_a_million_float32_values_print_as_numpy_prints_each(sh):
    """The fast formatter's text, end to end, against numpy's str of each float32 (the shortest text
    that reads back to the same float32), with NaN and infinities among them, nested 2-D."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(1_000_000) * 10.0 ** rng.integers(-8, 9, 1_000_000)).astype(np.float32)
    x[::9973] = np.nan
    x[5::10007] = np.inf
    x[::65537] = 0.0
    t = torch.from_numpy(x).reshape(1000, 1000)
    out = sh("torch value %s" % sh.put(t), timeout=300)
    texts = [{"nan": '"NaN"', "inf": '"Infinity"'}.get(s, s) for s in x.astype(str).tolist()]
    want = "[" + ",".join("[" + ",".join(texts[i:i + 1000]) + "]" for i in range(0, len(texts), 1000)) + "]"
    assert out == want


def test_api_replies_are_valid_json_unless_nan_bare(sh):
    h = sh.put(torch.tensor([float("nan"), -float("inf"), 0.5]))
    one = sh.put(torch.tensor([float("nan")]))
    for path, body, want in [("/v1/ops/value", {"tensors": [h]}, ["NaN", "-Infinity", 0.5]),
                             ("/v1/ops/item", {"tensors": [one]}, "NaN"),
                             ("/v1/ops/tolist", {"tensors": [h]}, ["NaN", "-Infinity", 0.5]),
                             ("/v1/tensors/%s?format=json" % h, None, ["NaN", "-Infinity", 0.5])]:
        method = "GET" if body is None else "POST"
        if path.startswith("/v1/ops/tolist"):
            status, _ = call(sh, "GET", "/v1/ops/tolist")
            if status != 200:
                continue  # `tolist` is another part of issue 11
        status, text = call(sh, method, path, body)
        assert status == 200 and strict_loads(text) == {"result": want}, (path, text)
        bare_path = path + ("&" if "?" in path else "?") + "nan=bare"
        status, text = call(sh, method, bare_path, body)
        assert status == 200 and "NaN" in text and '"NaN"' not in text, (bare_path, text)
        assert same(json.loads(text)["result"], torch.tensor(as_floats(want), dtype=torch.float64))
    status, text = call(sh, "POST", "/v1/ops/value?nan=maybe", {"tensors": [h]})
    assert status == 400 and json.loads(text)["error"]["code"] == "bad_request"


def test_api_nan_kwarg_of_value_wins_over_the_query(sh):
    h = sh.put(torch.tensor([float("inf")]))
    status, text = call(sh, "POST", "/v1/ops/value?nan=bare", {"tensors": [h], "kwargs": {"nan": "string"}})
    assert status == 200 and text == '{"result":["Infinity"]}'
    status, text = call(sh, "POST", "/v1/ops/value", {"tensors": [h], "kwargs": {"nan": "bare"}})
    assert status == 200 and text == '{"result":[Infinity]}'
