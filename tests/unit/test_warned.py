"""torchsh/warned.py: a job's warnings, each kind said once (its numbers blanked), none the starting request
printed already said again, another thread's left where it would have gone, and a run's log reading each kind
once from when it opened; jobs/job.py turns them into its followers' notes."""
import threading
import warnings

import torch

from torchsh import warned
from torchsh.context import Context
from torchsh.jobs import follow, job as jobs

from test_job_runner import App


def _target_size_warning(n):
    """PyTorch's own: mse_loss of [n, 1] outputs against [n] targets."""
    torch.nn.functional.mse_loss(torch.zeros(n, 1), torch.zeros(n))


def test_a_kind_is_said_once_whatever_its_numbers_and_a_new_category_or_text_is_another_kind():
    said = []
    with warned.Catch(said.append):
        for n in (16, 16, 4):  # a full batch twice, then the last, shorter one
            _target_size_warning(n)
        warnings.warn("Using a target size (torch.Size([2])) that is different", DeprecationWarning)
        warnings.warn("something else")
    assert len(said) == 3, said
    assert said[0].startswith("Using a target size (torch.Size([16])) that is different to the input size")
    assert said[1].startswith("Using a target size (torch.Size([2]))") and said[2] == "something else"


def test_what_the_starting_request_printed_is_not_said_again_and_the_swap_is_put_back():
    said, printed = [], ["Implicit dimension choice for softmax has been deprecated. Change the call to include "
                         "dim=X as an argument."]
    filters, show = warnings.filters, warnings.showwarning
    with warned.Catch(said.append, printed) as catch:
        assert warned.active() is catch
        torch.nn.Softmax()(torch.zeros(2, 3))
        warnings.warn("new")
    assert said == ["new"]
    assert warnings.filters is filters and warnings.showwarning is show and warned.active() is None


def test_another_threads_warning_goes_where_it_would_have():
    said, shown = [], []
    original = warnings.showwarning
    warnings.showwarning = lambda message, *rest: shown.append(str(message))
    try:
        with warned.Catch(said.append):
            t = threading.Thread(target=warnings.warn, args=("from a lock-free verb",))
            t.start()
            t.join()
    finally:
        warnings.showwarning = original
    assert said == [] and shown == ["from a lock-free verb"]


def test_a_reader_reads_each_kind_once_from_when_it_was_made():
    with warned.Catch(lambda line: None) as catch:
        warnings.warn("before the run's log")
        reader = warned.Reader()
        assert reader.new() == []
        for n in (8, 3):
            _target_size_warning(n)
        warnings.warn("before the run's log")  # raised again while it is open: its log gets it
        got = reader.new()
        _target_size_warning(5)
        assert reader.new() == []  # that kind is in this log already
    assert [c for c, _ in got] == ["UserWarning", "UserWarning"]
    assert got[0][1].startswith("Using a target size (torch.Size([3]))") and got[1][1] == "before the run's log"
    assert catch.serial == 5
    assert warned.Reader().new() == []  # outside a job: nothing to read


def test_a_jobs_warnings_are_notes_on_its_followers_stderr_once_per_kind():
    def work(report, should_stop):
        for n in (8, 8, 2):
            _target_size_warning(n)
            should_stop()  # a step boundary: the lock (and the swap) may be let go and taken again
        report({"event": "done", "epoch": 1, "step": 3})

    ctx = Context(App())
    job = jobs.start(ctx, "fit", work)
    while job.running():
        job.wait_for(len(job.events), 10.0)
    err = follow.everything(job).stderr
    assert err.count("torch: fit: warning: Using a target size") == 1, err
    assert "torch.Size([8])" in err
