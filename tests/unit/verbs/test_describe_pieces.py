"""verbs/describe.py reads a tensor in pieces: no piece over PIECE elements, every value once, in order, and no
whole copy of a tensor whatever its layout (a float64 copy of 1e8 elements would be 800 MB)."""
import resource

import pytest
import torch

from torchsh.verbs import describe


def test_pieces_cover_every_value_in_order_and_none_is_over_the_size():
    base = torch.arange(6 * 7 * 5, dtype=torch.float32).reshape(6, 7, 5)
    for t in (base, base.transpose(0, 2), base[:, ::2], base.reshape(-1)[::3], torch.tensor(3.0), base[:0]):
        parts = list(describe.pieces(t, size=8))
        assert all(p.dim() == 1 and p.numel() <= 8 for p in parts)
        assert torch.equal(torch.cat(parts) if parts else torch.zeros(0), t.reshape(-1))


@pytest.mark.slow
def test_1e8_elements_of_any_layout_are_described_without_a_whole_copy():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux: the process's peak so far
    for t in (torch.ones(1).expand(10 ** 8), torch.ones(1, 1).expand(10 ** 4, 10 ** 4).t()):  # no storage of its own
        d = describe.summary(t)
        assert (d["numel"], d["min"], d["max"], d["mean"], d["std"]) == (10 ** 8, 1.0, 1.0, 1.0, 0.0)
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grew_mib < 200, "describing grew the peak by %d MiB" % grew_mib
