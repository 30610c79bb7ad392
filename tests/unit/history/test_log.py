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
