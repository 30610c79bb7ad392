"""Tensors in and out: JSON round trips for every dtype, non-finite tokens, --meta, csv, npy."""
import json

import numpy as np
import pytest
import torch

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128"]


def test_dtype_inference_follows_pytorch(sh):
    assert sh("torch tensor '[1, 2]' | torch dtype") == "int64"
    assert sh("torch tensor '[1.0, 2]' | torch dtype") == "float32"
    assert sh("torch tensor '[true, false]' | torch dtype") == "bool"


def test_floats_print_shortest_in_their_own_dtype(sh):
    assert sh("torch tensor '[0.1, 1.0, 1e-8]' | torch value") == "[0.1,1.0,1e-08]"
    assert sh("torch tensor '[0.1]' --dtype float64 | torch value") == "[0.1]"
    assert sh("torch tensor '[0.1]' --dtype bfloat16 | torch value") == "[0.1]"
    assert sh("torch tensor '[0.1]' --dtype float16 | torch value") == "[0.1]"


def test_nonfinite_values_round_trip_as_strings_or_bare_tokens(sh):
    # valid JSON by default (issue 11 §5): the strings "NaN", "Infinity", "-Infinity"
    out = sh("torch tensor '[NaN, Infinity, -Infinity, 1.5]' | torch value")
    assert out == '["NaN","Infinity","-Infinity",1.5]'
    bare = sh("torch tensor '[NaN, Infinity, -Infinity, 1.5]' | torch value --nan bare")
    assert bare == "[NaN,Infinity,-Infinity,1.5]"
    for text in (out, bare):  # both forms read back
        t = sh.fetch(sh("echo '%s' | torch tensor" % text))
        assert torch.isnan(t[0]) and t[1] == float("inf") and t[2] == float("-inf") and t[3] == 1.5


@pytest.mark.parametrize("dtype", DTYPES)
def test_meta_round_trip_is_lossless_for_every_dtype(sh, dtype):
    torch.manual_seed(0)
    ref = (torch.randn(3, 2, dtype=torch.float64) * 100).to(getattr(torch, dtype)) if dtype != "bool" \
        else torch.tensor([[True, False]] * 3)
    h = sh.put(ref)
    meta = sh("torch value %s --meta" % h)
    assert json.loads(meta)["dtype"] == dtype and json.loads(meta)["shape"] == [3, 2]
    back = sh.fetch(sh("echo '%s' | torch tensor" % meta))
    assert back.dtype == ref.dtype and torch.equal(back, ref)


def test_meta_round_trip_keeps_empty_shapes(sh):
    h = sh("torch zeros '[0,3]'")
    back = sh("torch value %s --meta | torch tensor | torch shape" % h)
    assert back == "[0,3]"


def test_multiline_json_from_stdin(sh):
    assert sh("printf '[[1,2],\\n [3,4]]\\n' | torch tensor | torch shape") == "[2,2]"


def test_value_as_csv_and_npy(sh, tmp_path):
    h = sh("torch tensor '[[1.5,2.0],[3.0,4.25]]'")
    assert sh("torch value %s --format csv" % h) == "1.5,2.0\n3.0,4.25"
    path = tmp_path / "v.npy"
    sh("torch value %s --format npy > %s" % (h, path))
    assert np.array_equal(np.load(path), np.array([[1.5, 2.0], [3.0, 4.25]], dtype=np.float32))


def test_shape_dtype_item_print(sh):
    h = sh("torch tensor '[[1.0,2.0]]'")
    assert sh("torch shape %s" % h) == "[1,2]"
    assert sh("torch dtype %s" % h) == "float32"
    assert sh("torch sum %s | torch item" % h) == "3.0"
    assert sh("torch print %s" % h) == str(torch.tensor([[1.0, 2.0]]))


def test_index_with_a_slice_string(sh):
    ref = torch.arange(60).reshape(3, 4, 5)
    h = sh.put(ref)
    for expr, key in [("[1:3, ::2, None, -1]", (slice(1, 3), slice(None, None, 2), None, -1)),
                      ("[..., 0]", (Ellipsis, 0)), ("[[0,2]]", torch.tensor([0, 2]))]:
        assert torch.equal(sh.fetch(sh("torch index %s '%s'" % (h, expr))), ref[key])


def test_index_put_and_masked_fill_leave_the_input_alone(sh):
    h = sh("torch zeros '[2,3]'")
    out = sh.fetch(sh("torch index_put %s '[0, 1:]' $(torch tensor '[5.0, 6.0]')" % h))
    assert torch.equal(out, torch.tensor([[0.0, 5.0, 6.0], [0.0, 0.0, 0.0]]))
    assert torch.equal(sh.fetch(h), torch.zeros(2, 3))
    mask = sh("torch tensor '[[true,false,false],[false,false,true]]'")
    assert torch.equal(sh.fetch(sh("torch masked_fill %s %s 9" % (h, mask))),
                       torch.tensor([[9.0, 0, 0], [0, 0, 9.0]]))


def test_clone_is_independent_and_to_converts(sh):
    h = sh("torch tensor '[1.0]'")
    c = sh("torch clone %s" % h)
    assert c != h and sh("torch value %s" % c) == "[1.0]"
    assert sh("torch to %s --dtype float64 | torch dtype" % h) == "float64"
    assert sh("torch contiguous $(torch transpose $(torch ones '[2,3]') 0 1) | torch shape") == "[3,2]"


def test_seeded_draws_equal_in_process_pytorch(sh):
    out = sh("torch manual_seed 42; torch randn '[5]'; torch rand '[2,2]'; torch randint 10 '[4]'")
    hs = out.split("\n")
    torch.manual_seed(42)
    refs = [torch.randn(5), torch.rand(2, 2), torch.randint(10, (4,))]
    for h, ref in zip(hs, refs):
        assert torch.equal(sh.fetch(h), ref)
