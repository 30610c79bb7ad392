"""The census answers for every object, even one whose fields cannot be read."""
import torch

from torchsh.registry import Registry
from torchsh.registry.census import census_rows


def test_an_optimizer_whose_lr_is_not_a_number_is_listed_with_lr_none():
    r = Registry()
    o = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    o.param_groups[0]["lr"] = "[1,2]"  # what a half-built scheduler once left behind
    h = r.put(o, "optim")
    (row,) = census_rows(r)
    assert row["handle"] == h and row["kind"] == "optim" and row["lr"] is None and row["bytes"] == 0


def test_an_object_whose_census_fields_raise_still_has_a_row():
    class Broken(torch.nn.Module):
        def parameters(self, recurse=True):
            raise RuntimeError("no parameters today")
    r = Registry()
    ok, broken = r.put(torch.zeros(3)), r.put(Broken(), "nn")
    rows = {row["handle"]: row for row in census_rows(r)}
    assert rows[ok]["shape"] == [3]
    assert rows[broken]["bytes"] == 0 and "no parameters today" in rows[broken]["unreadable"]
