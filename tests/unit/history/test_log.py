"""The history log stays within its bounds (entries and bytes), the oldest going first, and logs only the ops
that change state."""
import torch

from torchsh.history.log import Entry, HistoryLog, changes_state
from torchsh.table.spec import OpSpec, Overload


def _entry(size=256):
    return Entry(0, "add", {}, [], size=size)


def test_the_log_keeps_the_newest_entries_within_its_count_bound():
    log = HistoryLog(max_entries=10, max_bytes=10 ** 9)
    for _ in range(25):
        log.add(_entry())
    seqs = [e.seq for e in log.entries()]
    assert seqs == list(range(16, 26))
    assert log.stats()["entries"] == 10 and log.stats()["dropped"] == 15


def test_the_log_keeps_its_bytes_within_its_byte_bound():
    log = HistoryLog(max_entries=10 ** 6, max_bytes=10_000)
    for _ in range(100):
        log.add(_entry(size=1_000))
    assert log.stats()["bytes"] <= 10_000
    assert len(log.entries()) == 10


def _op(name, returns, verb=True, writes=()):
    return OpSpec(name=name, category="x", summary="", overloads=[Overload(args=(), returns=returns)], verb=verb,
                  writes=writes)


def test_only_ops_that_make_or_change_objects_are_logged():
    log = HistoryLog()
    assert log.watch(_op("value", "Json")) is None
    assert log.watch(_op("shape", "int[]")) is None
    assert log.watch(_op("h_add", "Tensor", verb=False)) is not None
    assert log.watch(_op("step", "None", writes=("optimizer",))) is not None  # in place: its row says what
    assert changes_state(_op("h_nn.x", "Module"))


def test_a_watch_notes_whether_the_op_drew_from_the_generator():
    log = HistoryLog()
    watch = log.watch(_op("h_randn", "Tensor", verb=False))
    before = torch.get_rng_state()
    torch.randn(3)
    assert not torch.equal(before, torch.get_rng_state()) and torch.equal(watch.before, before)


def test_an_op_the_log_cannot_note_is_logged_as_unnoted_and_does_not_fail():
    class Broken:
        made = []

        @property
        def registry(self):
            raise RuntimeError("a bug while noting")
    log = HistoryLog()
    log.watch(_op("h_add", "Tensor", verb=False)).done(Broken(), {}, None)
    assert log.entries()[0].made == {"unnoted": True}


class _Ctx:
    """What Watch.done reads of a request's Context."""

    def __init__(self, registry):
        self.registry, self.made, self.noted = registry, [], None


def test_an_entry_keeps_the_generator_state_before_an_op_that_drew_and_none_otherwise():
    from torchsh.registry.store import Registry
    ctx, log = _Ctx(Registry()), HistoryLog()
    drew = log.watch(_op("h_randn", "Tensor", verb=False))
    before = torch.get_rng_state()
    drew.done(ctx, {"size": [3]}, torch.randn(3))
    log.watch(_op("h_add", "Tensor", verb=False)).done(ctx, {}, torch.ones(3) + 1)
    first, second = log.entries()
    assert torch.equal(first.rng, before) and first.size >= before.numel()
    assert second.rng is None


def test_an_entry_names_the_objects_its_row_writes_held_alone_or_in_a_list():
    from torchsh.registry.store import Registry
    registry, log = Registry(), HistoryLog()
    a, b, c = torch.zeros(1), torch.zeros(1), torch.zeros(1)
    ha, hb, hc = registry.put(a), registry.put(b), registry.put(c)
    watch = log.watch(_op("h_fill", "None", writes=("out", "rest", "absent")))
    watch.done(_Ctx(registry), {"out": a, "rest": [b, 2.0, c], "other": a}, None)
    assert log.entries()[0].writes == (("h", ha), ("h", hb), ("h", hc))
