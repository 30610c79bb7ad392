"""The history log's file keeps every entry it can hold bit for bit, and an entry it cannot hold (a sparse
tensor literal, a value JSON cannot write) is saved as unnoted instead of failing the whole session save."""
import torch

from torchsh.history import persist
from torchsh.history.log import Entry, HistoryLog


def _round_trip(entries, tmp_path):
    log = HistoryLog()
    for e in entries:
        log.add(e)
    persist.save(log, str(tmp_path))
    back = HistoryLog()
    persist.load(back, str(tmp_path))
    return back.entries()


def test_tensor_literals_of_every_dtype_come_back_equal_complex128_included(tmp_path):
    values = [torch.arange(6.0).reshape(2, 3).to(torch.complex128) * (1 + 2j), torch.tensor([1.5, -0.0]),
              torch.tensor([True, False]), torch.arange(4, dtype=torch.int64)[1:]]
    entries = [Entry(0, "add", {"input": ("t", v)}, ["tensor://x%d" % i]) for i, v in enumerate(values)]
    back = _round_trip(entries, tmp_path)
    for v, e in zip(values, back):
        got = e.args["input"][1]
        assert got.dtype == v.dtype and torch.equal(got, v)


def test_an_entry_the_file_cannot_hold_is_saved_as_unnoted_and_the_rest_is_kept(tmp_path):
    rng = torch.get_rng_state()
    entries = [Entry(0, "randn", {"size": [3]}, ["tensor://a"], rng=rng),
               Entry(0, "add", {"input": ("t", torch.ones(3).to_sparse())}, ["tensor://b"]),
               Entry(0, "nn.linear", {"in_features": 2}, ["nn://c"], made={"ctor": object()}),
               Entry(0, "mul", {"input": ("h", "tensor://a"), "other": 2.0}, ["tensor://d"])]
    back = _round_trip(entries, tmp_path)
    assert [e.op for e in back] == ["randn", "add", "nn.linear", "mul"]
    assert [e.outputs for e in back] == [["tensor://a"], ["tensor://b"], ["nn://c"], ["tensor://d"]]
    assert torch.equal(back[0].rng, rng)
    assert back[1].made == {"unnoted": True} and back[2].made == {"unnoted": True}
    assert back[3].args == {"input": ("h", "tensor://a"), "other": 2.0} and not back[3].made.get("unnoted")
