"""A handle kind's row carries its persistence (capture, build, state, load): a kind added as one row goes
through a session folder and comes back, with nothing else taught about it."""
import torch

from torchsh.recipes.base import Persistence
from torchsh.registry import kinds, store
from torchsh.registry.kinds import HANDLE_KINDS, HandleKind
from torchsh.registry.store import Registry
from torchsh.session import transfer


class Counter:
    """A made-up held kind: a number in its recipe, a tensor in its state."""

    def __init__(self, start):
        self.start, self.seen = start, torch.zeros(3)


COUNTER = HandleKind("counter", Counter, "a counter", lambda c: {"bytes": 0}, lambda c: [], Persistence(
    capture=lambda c, walk: {"kind": "counter", "start": c.start},
    build=lambda rec, walk: Counter(rec["start"]),
    state=lambda c, skip: {"seen": c.seen},
    load=lambda c, values: c.seen.copy_(values["seen"])))


def test_a_kind_added_as_one_row_is_saved_in_a_session_and_comes_back(tmp_path, monkeypatch):
    monkeypatch.setitem(HANDLE_KINDS, "counter", COUNTER)
    monkeypatch.setattr(store, "KINDS", kinds.KINDS + ("counter",))
    registry = Registry()
    counter = Counter(7)
    counter.seen += torch.tensor([1.0, 2.0, 3.0])
    handle = registry.put(counter, "counter")
    assert transfer.save_folder(registry, str(tmp_path))["skipped"] == []
    fresh = Registry()
    transfer.hold(fresh, transfer.read_folder(str(tmp_path)), True)
    back = fresh.get(handle, "counter")
    assert isinstance(back, Counter) and back.start == 7 and torch.equal(back.seen, torch.tensor([1.0, 2.0, 3.0]))
