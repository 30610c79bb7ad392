"""Folded stacks from a hand-made chrome trace: nesting by time per thread, self times summed for equal stacks,
frames cleaned (addresses, semicolons), threads that ran no op left out, and every line `frame;frame COUNT`."""
import re

from torchsh.profile.folded import folded_lines, frame_name


def _x(name, ts, dur, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur}


def test_events_nest_by_time_and_each_stack_gets_its_self_time():
    events = [
        _x("run.py(3): main", 0.0, 100.0, cat="python_function"),
        _x("aten::matmul", 10.0, 50.0),
        _x("aten::mm", 12.0, 40.0),
        _x("aten::add", 70.0, 20.0),
    ]
    assert folded_lines(events) == [
        "run.py(3): main 30",
        "run.py(3): main;aten::add 20",
        "run.py(3): main;aten::matmul 10",
        "run.py(3): main;aten::matmul;aten::mm 40",
    ]


def test_equal_stacks_are_summed_and_sub_microsecond_ones_left_out():
    events = [_x("aten::mm", 0.0, 2.4), _x("aten::mm", 10.0, 2.4), _x("aten::t", 20.0, 0.3)]
    assert folded_lines(events) == ["aten::mm 5"]


def test_a_child_ending_a_rounding_after_its_parent_still_nests():
    events = [_x("aten::linear", 0.0, 10.0), _x("aten::addmm", 5.0, 5.004)]
    assert folded_lines(events) == ["aten::linear 5", "aten::linear;aten::addmm 5"]


def test_threads_fold_apart_and_a_thread_that_ran_no_op_is_left_out():
    events = [_x("aten::mm", 0.0, 10.0, tid=1), _x("aten::add", 2.0, 4.0, tid=2),
              _x("selectors.py(1): select", 0.0, 1000.0, cat="python_function", tid=3),
              {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "tid": 1, "ts": 3.0}]
    assert folded_lines(events) == ["aten::add 4", "aten::mm 10"]


def test_frame_names_lose_addresses_semicolons_and_extra_whitespace():
    assert frame_name("<built-in method mm of type object at 0x7f0a1b2c>") == "<built-in method mm of type>"
    assert frame_name("a;b\n c") == "a:b c"


def test_every_line_is_frames_joined_by_semicolons_then_a_count():
    events = [_x("f.py(1): <module>", 0.0, 50.0, cat="python_function"), _x("x; y", 1.0, 10.0),
              _x("aten::mm", 20.0, 5.0)]
    assert all(re.fullmatch(r"[^;\n]+(;[^;\n]+)* \d+", line) for line in folded_lines(events))
