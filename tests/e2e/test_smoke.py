"""The README's first lines, end to end."""
import torch


def test_matmul_sum_value_pipeline(sh):
    out = sh("a=$(torch tensor '[[1.0,2.0],[3.0,4.0]]'); b=$(torch full '[2,2]' 0.5); "
             "torch matmul $a $b | torch sum | torch value")
    assert out == "10.0"


def test_stdin_fills_leftmost_missing_tensor(sh):
    a = sh("torch tensor '[1.0, 2.0]'")
    b = sh("torch tensor '[10.0, 20.0]'")
    out = sh("echo %s | torch sub %s | torch value" % (a, b))
    assert out == "[-9.0,-18.0]"  # sub(a, b): the piped handle is the first argument


def test_fetch_is_bit_exact(sh):
    t = torch.randn(3, 4, dtype=torch.float64)
    assert torch.equal(sh.fetch(sh.put(t)), t)
