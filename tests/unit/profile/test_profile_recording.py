"""The one recording, driven in-process on this thread as the tensor thread drives it in the daemon: --steps starts
at the first step boundary and stops N steps later, a second begin is busy, the caller's drop discards it, the time
and memory caps stop it with a note (the watcher's queued stop), and a finish of an unknown id is refused."""
import queue
import time

import pytest
import torch

from torchsh import memory
from torchsh.errors import TorchshError
from torchsh.profile import recording
from torchsh.profile.recording import Settings


def _never(fn):
    """Where the watcher posts its stop: nowhere, these tests drive the ends themselves."""


def _mm_calls(rec):
    return sum(1 for e in rec.profiler.events() if e.name == "aten::mm")


@pytest.fixture(autouse=True)
def _nothing_left():
    yield
    if recording._CURRENT is not None:
        recording.abandon(recording._CURRENT.id)


def test_steps_start_at_the_first_boundary_and_stop_n_steps_later():
    a = torch.ones(4, 4)
    rec = recording.begin(Settings(steps=2), _never)
    assert rec.state == "armed"
    for _ in range(5):
        torch.mm(a, a)  # a step's work
        recording.at_step()
    assert rec.state == "stopped"
    assert recording.finish(rec.id) is rec and _mm_calls(rec) == 2  # steps 2 and 3 of 5


def test_a_second_profile_is_busy_until_the_first_is_finished():
    rec = recording.begin(Settings(), _never)
    with pytest.raises(TorchshError) as e:
        recording.begin(Settings(), _never)
    assert e.value.code == "busy"
    recording.finish(rec.id)
    recording.finish(recording.begin(Settings(), _never).id)


def test_a_dropped_caller_discards_the_recording_and_its_finish_is_refused():
    rec = recording.begin(Settings(), _never)
    recording.abandon(rec.id)
    assert rec.state == "stopped" and recording._CURRENT is None
    with pytest.raises(TorchshError) as e:
        recording.finish(rec.id)
    assert e.value.code == "bad_argument"


def _stopped_by_the_watcher(settings, meanwhile):
    """Record, do `meanwhile`, run the stop the watcher queues (as the tensor thread would), then one more mm."""
    a, queued = torch.ones(4, 4), queue.Queue()
    rec = recording.begin(settings, queued.put)
    torch.mm(a, a)
    meanwhile(rec)
    queued.get(timeout=60)()  # the watcher looks every WATCH_S
    torch.mm(a, a)
    assert rec.state == "stopped"
    return rec


def test_the_time_cap_stops_recording_with_a_note_and_keeps_what_it_recorded():
    def thirty_seconds_pass(rec):
        rec.deadline = time.monotonic()
    rec = _stopped_by_the_watcher(Settings(max_s=30), thirty_seconds_pass)
    assert "--max_s 30 s" in rec.note
    assert _mm_calls(recording.finish(rec.id)) == 1


def test_the_memory_cap_stops_recording_once_the_daemon_grew_that_much():
    grown = []

    def grow(rec):  # until RSS says so: a first tensor may reuse memory the heap kept from earlier tests
        while memory.rss_bytes() - rec.start_rss < 16 << 20 and len(grown) < 64:
            grown.append(torch.ones(8 << 20))
    rec = _stopped_by_the_watcher(Settings(max_growth=8 << 20), grow)
    assert "memory grew" in rec.note and "a quarter of what its budget had left" in rec.note, rec.note
    assert _mm_calls(recording.finish(rec.id)) == 1


def test_a_caller_gone_during_a_job_is_dropped_at_its_next_step_boundary():
    rec = recording.begin(Settings(), _never)  # the queued abandon never runs: a fit holds the tensor thread
    recording.caller_gone(rec, _never)
    assert recording._CURRENT is rec
    recording.at_step()
    assert rec.state == "stopped" and recording._CURRENT is None
