"""The Tensor-method spellings a PyTorch user types (`view`, `size`, `float`, `T`, `tolist`…), each equal to
what the method or property gives in in-process PyTorch; `torch cuda` on a CPU build is device_error."""
import json

import pytest
import torch

X = torch.tensor([[1.5, -2.25, 3.0], [4.0, 0.0, -6.5]])


@pytest.fixture(scope="module")
def x(sh):
    return sh.put(X)


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want)


@pytest.mark.parametrize("method", ["float", "double", "half", "long", "int", "bool", "bfloat16", "short",
                                    "char", "byte", "cpu"])
def test_method_spellings_equal_the_tensor_method(sh, x, method):
    _same(sh.fetch(sh("torch %s %s" % (method, x))), getattr(X, method)())


@pytest.mark.parametrize("prop", ["T", "mT"])
def test_property_spellings_equal_the_tensor_property(sh, x, prop):
    _same(sh.fetch(sh("torch %s %s" % (prop, x))), getattr(X, prop))


def test_T_of_a_3d_tensor_reverses_every_dimension(sh):
    t = torch.arange(24.0).reshape(2, 3, 4)
    with pytest.warns(UserWarning):  # PyTorch deprecates .T beyond 2-D, but still answers
        want = t.T
    _same(sh.fetch(sh("torch T %s" % sh.put(t))), want)


@pytest.mark.parametrize("args, shape", [("'[3,2]'", [3, 2]), ("6", [6]), ("'[-1,1]'", [-1, 1])])
def test_view_equals_tensor_view(sh, x, args, shape):
    _same(sh.fetch(sh("torch view %s %s" % (x, args))), X.view(*shape))


def test_view_to_a_dtype_reinterprets_the_bits(sh, x):
    _same(sh.fetch(sh("torch view %s int32" % x)), X.view(torch.int32))


def test_size_dim_numel_print_numbers(sh, x):
    assert json.loads(sh("torch size %s" % x)) == list(X.size())
    assert sh("torch size %s 0" % x) == str(X.size(0))
    assert sh("torch size %s -1" % x) == str(X.size(-1))
    assert sh("torch dim %s" % x) == str(X.dim())
    assert sh("torch numel %s" % x) == str(X.numel())


def test_tolist_is_value_and_item_is_item(sh, x):
    assert json.loads(sh("torch tolist %s" % x)) == X.tolist()
    assert sh("torch tolist %s" % x) == sh("torch value %s" % x)
    one = torch.tensor([2.75])
    assert json.loads(sh("torch item %s" % sh.put(one))) == one.item()


def test_methods_take_piped_handles(sh, x):
    assert json.loads(sh("echo %s | torch size" % x)) == [2, 3]
    _same(sh.fetch(sh("echo %s | torch long" % x)), X.long())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_on_a_cpu_build_is_device_error_like_device_cuda(sh, x):
    r = sh.run("torch cuda %s" % x)
    assert r.code == 4 and r.out == "", r.err
    line = r.err.strip()
    assert "\n" not in line and line.startswith("torch: cuda: ") and line.endswith("[device_error]")
    assert "devices here: cpu" in line
    same = sh.run("torch ones 2 --device cuda")
    assert same.code == 4 and same.err.strip().endswith("[device_error]")
