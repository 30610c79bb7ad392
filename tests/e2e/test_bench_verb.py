"""`torch bench OP ARGS…`: one op timed by torch.utils.benchmark.Timer alone and as the daemon handles the
command; refusals of what would change state; and nothing left behind (objects, history, the generator).

No figure is compared with another: the machine's load decides timings, so only their structure is pinned."""
import json
import re

import pytest

QUICK = "--max_run_time 0.1"


def _figures_are_whole(figure):
    assert figure["median_s"] > 0 and figure["iqr_s"] >= 0
    assert figure["runs"] >= figure["measurements"] >= 1


def test_bench_matmul_json_gives_pytorchs_median_iqr_and_runs_for_the_call_and_the_request(sh):
    record = json.loads(sh("a=$(torch randn 8 8); b=$(torch randn 8 8); torch bench matmul $a $b --json " + QUICK))
    assert set(record) == {"op", "pytorch", "daemon", "overhead_s", "num_threads"}
    assert record["op"] == "matmul" and record["num_threads"] >= 1
    _figures_are_whole(record["pytorch"])
    _figures_are_whole(record["daemon"])
    assert record["overhead_s"] == record["daemon"]["median_s"] - record["pytorch"]["median_s"]


def test_bench_add_with_a_scalar_prints_both_figures_and_says_what_each_includes(sh):
    out = sh("x=$(torch randn 100); torch bench add $x 1 --num_threads 1 " + QUICK)
    assert out.startswith("add (1 thread, torch.utils.benchmark.Timer.adaptive_autorange):")
    assert re.search(r"^  the call alone +\S+ \S?s +\S+ \S?s +\d+$", out, re.M), out
    assert re.search(r"^  the request in torchd +\S+ \S?s +\S+ \S?s +\d+$", out, re.M), out
    assert re.search(r"^  overhead +-?\S+ \S?s$", out, re.M), out
    assert "torch.add(...)" in out and "without the socket and the client" in out


def test_the_ops_own_flags_go_after_a_double_dash(sh):
    record = json.loads(sh("t=$(torch randn 3 4); torch bench --json %s -- sum $t --dim 1" % QUICK))
    assert record["op"] == "sum" and record["daemon"]["runs"] >= 1


def test_ops_that_change_state_verbs_and_jobs_are_refused_before_anything_runs(sh):
    setup = ("w=$(torch randn 3 --requires_grad); l=$(torch sum $(torch mul $w $w)); "
             "m=$(torch nn linear 3 1); o=$(torch optim sgd $m --lr 0.1); ")
    for words, why in (("backward $l", "backward changes the objects it is given"),
                       ("step $o", "step changes the objects it is given"),
                       ("nn linear 2 3", "nn linear is a torchsh verb, not a PyTorch op"),
                       ("sweep", "sweep runs a job"),
                       ("inference_mode", "inference_mode is a block form"),
                       ("scope", "scope is a group of commands")):
        r = sh.run(setup + "torch bench " + words)
        assert r.code == 2 and r.out == "", r.err
        assert r.err.startswith("torch: bench: bench times PyTorch ops that only compute; " + why), r.err
        assert "e.g. torch bench matmul $a $b" in r.err and r.err.rstrip().endswith("[usage]"), r.err
    r = sh.run("w=$(torch randn 3 --requires_grad); torch bench backward $(torch sum $w); torch grad $w")
    assert "no gradient yet" in r.err, r.err  # backward never ran


def test_an_unknown_op_is_unknown_op_with_the_clis_suggestion(sh):
    r = sh.run("torch bench matmull $(torch randn 2 2) $(torch randn 2 2)")
    assert r.code == 2 and "did you mean matmul?" in r.err and r.err.rstrip().endswith("[unknown_op]"), r.err


def test_a_command_that_fails_fails_as_the_op_does(sh):
    r = sh.run("torch bench matmul $(torch randn 2 3) $(torch randn 4 5)")
    assert r.code != 0 and r.err.rstrip().endswith("[shape_mismatch]"), r.err
    r = sh.run("torch bench add 1 2 --max_run_time 100")
    assert r.code == 2 and "at most 30 seconds" in r.err and r.err.rstrip().endswith("[bad_argument]"), r.err


def test_bench_leaves_no_objects_no_history_and_the_generator_as_it_was(sh):
    def held():
        status = json.loads(sh("torch status --json"))
        return status["objects"], status["history"]["entries"]
    sh("a=$(torch randn 16 16); echo $a > a.txt")
    before = held()
    sh("a=$(cat a.txt); torch bench matmul $a $a %s > /dev/null; torch bench randn 3 %s > /dev/null" % (QUICK, QUICK))
    assert held() == before
    seeded = "torch manual_seed 5 > /dev/null; %s torch value $(torch randn 4)"
    assert sh(seeded % ("torch bench randn 3 %s > /dev/null;" % QUICK)) == sh(seeded % "")


@pytest.mark.parametrize("times", [[1.0, 1.01, 1.02, 0.99], [1.0, 1.2, 1.3, 0.9, 1.0], [1.0, 1.0, 3.0, 5.0, 0.5]])
def test_a_spread_figure_gets_the_warning_pytorchs_measurement_gives_it(times):
    """PyTorch's own Measurement is the oracle: a warning exactly when it has one, in its words."""
    from torch.utils.benchmark import Measurement
    from torch.utils.benchmark.utils.common import TaskSpec
    from torchsh.cli.bench import spread_note
    m = Measurement(number_per_run=1, raw_times=times, task_spec=TaskSpec(stmt="pass", setup=""))
    note = spread_note(m.iqr, m.median)
    assert bool(note) == m.has_warnings
    if note:
        assert "%.1f%%" % (m.iqr / m.median * 100) in note and note.split(": ")[1].split(" (")[0] in repr(m).lower()
