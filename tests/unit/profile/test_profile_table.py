"""The top-N ops table from a hand-made trace: ops only (not Python functions), self time less the child ops',
memory to the innermost op, threads apart; sorted by the chosen column, cut to N, and rendered as aligned text,
tsv with a header, or a list of records."""
from types import SimpleNamespace

from torchsh.profile import table
from torchsh.results import Text


def _x(name, ts, dur, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur}


def _memory(ts, nbytes, tid=1, device=0):
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": tid, "ts": ts,
            "args": {"Bytes": nbytes, "Device Type": device}}


EVENTS = [
    _x("f.py(1): main", 0.0, 200.0, cat="python_function"),
    _x("aten::matmul", 10.0, 50.0), _x("aten::mm", 12.0, 40.0), _memory(13.0, 1024),
    _x("aten::add", 70.0, 10.0), _memory(71.0, 64), _x("aten::add", 90.0, 10.0), _memory(91.0, 64),
    _memory(95.0, 4096, device=1), _memory(150.0, 8),  # a CUDA block, and one outside any op
    _x("aten::add", 0.0, 10.0, tid=2),
]


def _rows():
    return {r["name"]: r for r in table.rows(EVENTS)}


def test_rows_are_ops_only_with_self_total_calls_and_memory():
    rows = _rows()
    assert set(rows) == {"aten::matmul", "aten::mm", "aten::add"}
    assert rows["aten::matmul"] == {"name": "aten::matmul", "calls": 1, "self_cpu_us": 10.0, "total_cpu_us": 50.0,
                                    "self_cpu_memory_bytes": 0}
    assert rows["aten::mm"]["self_cpu_memory_bytes"] == 1024
    assert (rows["aten::add"]["calls"], rows["aten::add"]["self_cpu_us"], rows["aten::add"]["self_cpu_memory_bytes"]) \
        == (3, 30.0, 128)


def test_top_sorts_by_the_chosen_column_most_first_and_cuts():
    rows = table.rows(EVENTS)
    assert [r["name"] for r in table.top(rows, "calls", 5)] == ["aten::add", "aten::matmul", "aten::mm"]
    assert [r["name"] for r in table.top(rows, "self_cpu", 1)] == ["aten::mm"]
    assert [r["name"] for r in table.top(rows, "memory", 1)] == ["aten::mm"]


def test_cuda_columns_come_from_key_averages_by_name():
    rows = table.add_cuda(table.rows(EVENTS), [SimpleNamespace(key="aten::mm", self_device_time_total=7.0,
                                                               device_time_total=9.0, self_device_memory_usage=512)])
    mm = next(r for r in rows if r["name"] == "aten::mm")
    add = next(r for r in rows if r["name"] == "aten::add")
    assert (mm["self_cuda_us"], mm["total_cuda_us"], mm["self_cuda_memory_bytes"]) == (7.0, 9.0, 512)
    assert (add["self_cuda_us"], add["total_cuda_us"], add["self_cuda_memory_bytes"]) == (0.0, 0.0, 0)


def test_text_tsv_and_json_forms():
    rows = table.top(table.rows(EVENTS), "self_cpu", 3)
    text = table.rendered(rows, table.CPU_COLUMNS, "text").text().splitlines()
    assert text[0].split() == list(table.CPU_COLUMNS)
    assert text[1].split() == ["aten::mm", "1", "40.0", "40.0", "1024"]
    assert len({len(line) for line in text}) == 1  # aligned: numbers to the right
    tsv = table.rendered(rows, table.CPU_COLUMNS, "tsv")
    assert isinstance(tsv, Text) and tsv.splitlines()[2] == "aten::add\t3\t30.0\t30.0\t128"
    assert table.rendered(rows, table.CPU_COLUMNS, "json") == rows


def test_an_op_whose_first_child_is_itself_counts_once_as_key_averages_does():
    events = [_x("aten::sum", 0.0, 20.0), _x("aten::sum", 2.0, 16.0), _x("aten::fill_", 4.0, 6.0)]
    rows = {r["name"]: r for r in table.rows(events)}
    assert (rows["aten::sum"]["calls"], rows["aten::sum"]["self_cpu_us"], rows["aten::sum"]["total_cpu_us"]) \
        == (1, 14.0, 20.0)
    assert rows["aten::fill_"]["calls"] == 1
