"""`torch describe T`: a tensor's facts and finite-value stats in a few hundred bytes, PyTorch the oracle."""
import json
import math

import pytest
import torch


def _described(sh, t, *flags):
    return json.loads(sh("torch describe %s %s --json" % (sh.put(t), " ".join(flags))))


def _check_stats(d, t):
    """d's stats against PyTorch over t's finite values (NaN and infinities counted apart)."""
    values = t.reshape(-1)
    finite = values[torch.isfinite(values)] if t.is_floating_point() else values
    assert (d["nan"], d["inf"]) == ((int(values.isnan().sum()), int(values.isinf().sum())) if t.is_floating_point()
                                    else (0, 0))
    if finite.numel() == 0:
        assert [d[k] for k in ("min", "max", "mean", "std")] == [None] * 4
        return
    assert torch.tensor(d["min"], dtype=t.dtype) == finite.min() and torch.tensor(d["max"], dtype=t.dtype) == finite.max()
    wide = finite.to(torch.float64)
    assert math.isclose(d["mean"], float(wide.mean()), rel_tol=1e-12, abs_tol=1e-12)
    if finite.numel() > 1:
        assert math.isclose(d["std"], float(wide.std()), rel_tol=1e-9, abs_tol=1e-12)
    else:
        assert d["std"] is None


@pytest.mark.parametrize("t", [
    torch.tensor([[1.5, float("nan"), -2.0], [float("inf"), 0.25, float("-inf")]]),
    torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0)),
    torch.arange(-7, 20, dtype=torch.int16).reshape(3, 9),
    torch.tensor([True, False, True, True]),
    torch.tensor(2.5, dtype=torch.float64),
    torch.full((4,), float("nan")),
    torch.randn(1000, 300, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16),
], ids=["nan-inf", "float32-3d", "int16", "bool", "0-d", "all-nan", "bfloat16-over-a-piece"])
def test_describe_matches_pytorch(sh, t):
    d = _described(sh, t)
    assert (d["shape"], d["dtype"], d["numel"], d["device"], d["requires_grad"]) == (
        list(t.shape), str(t.dtype).replace("torch.", ""), t.numel(), "cpu", False)
    _check_stats(d, t)


def test_corner_of_a_3d_tensor_with_its_index_ranges(sh):
    t = torch.arange(2 * 5 * 6, dtype=torch.float32).reshape(2, 5, 6)
    d = _described(sh, t, "--corner", "3")
    assert d["corner"]["index"] == [[0, 1], [0, 3], [0, 3]]
    assert d["corner"]["values"] == t[0:1, 0:3, 0:3].reshape(-1).tolist()
    nan = _described(sh, torch.tensor([float("nan"), float("inf"), 1.0]))
    assert nan["corner"] == {"index": [[0, 3]], "values": ["NaN", "Infinity", 1.0]}
    assert _described(sh, torch.tensor(7))["corner"] == {"index": [], "values": [7]}


def test_an_empty_tensor_has_no_stats_and_no_corner(sh):
    d = _described(sh, torch.zeros(0, 4))
    assert (d["numel"], d["min"], d["mean"], d["std"], d["corner"]) == (0, None, None, None,
                                                                        {"index": [[0, 0], [0, 4]], "values": []})


def test_describe_makes_no_handle_and_is_not_in_the_history(sh):
    x = sh("torch ones 2 2")
    before = sh("torch tensors -q | wc -l"), sh("torch history --json | wc -l")
    sh("torch describe %s" % x)
    assert (sh("torch tensors -q | wc -l"), sh("torch history --json | wc -l")) == before


def test_corner_over_its_bound_is_refused(sh):
    r = sh.run("torch describe $(torch ones 2) --corner 33")
    assert r.code == 2 and "[bad_argument]" in r.err


@pytest.mark.slow
def test_describe_of_1e8_zeros_reads_it_in_pieces(sh):
    x = sh("torch zeros 100000000")
    try:
        d = json.loads(sh("torch describe %s --json" % x, timeout=300))
    finally:
        sh("torch free %s" % x)
    assert (d["numel"], d["min"], d["max"], d["mean"], d["std"], d["nan"], d["inf"]) == (10 ** 8, 0.0, 0.0, 0.0,
                                                                                        0.0, 0, 0)
    assert len(d["corner"]["values"]) == 4 and len(json.dumps(d)) < 1000
