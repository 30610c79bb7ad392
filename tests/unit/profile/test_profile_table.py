"""The top-N ops table: rows only for ops (not the Python functions key_averages() also averages), sorted by the
chosen column, cut to N, and rendered as aligned text, tsv with a header, or a list of records."""
from types import SimpleNamespace

from torchsh.call.results import Text
from torchsh.profile import table


def _avg(key, count, self_us, total_us, mem):
    return SimpleNamespace(key=key, count=count, self_cpu_time_total=self_us, cpu_time_total=total_us,
                           self_cpu_memory_usage=mem)


AVERAGES = [_avg("aten::mm", 2, 40.0, 45.5, 1024), _avg("aten::add", 5, 10.0, 10.0, 64),
            _avg("<built-in method mm of type object>", 2, 5.0, 50.0, 0)]


def test_rows_are_ops_only_with_times_in_microseconds():
    rows = table.rows(AVERAGES, {"aten::mm", "aten::add"})
    assert rows[0] == {"name": "aten::mm", "calls": 2, "self_cpu_us": 40.0, "total_cpu_us": 45.5,
                       "self_cpu_memory_bytes": 1024}
    assert [r["name"] for r in rows] == ["aten::mm", "aten::add"]


def test_top_sorts_by_the_chosen_column_most_first_and_cuts():
    rows = table.rows(AVERAGES, {"aten::mm", "aten::add"})
    assert [r["name"] for r in table.top(rows, "calls", 5)] == ["aten::add", "aten::mm"]
    assert [r["name"] for r in table.top(rows, "memory", 1)] == ["aten::mm"]


def test_text_tsv_and_json_forms():
    rows = table.rows(AVERAGES, {"aten::mm", "aten::add"})
    text = table.rendered(rows, table.CPU_COLUMNS, "text").text().splitlines()
    assert text[0].split() == list(table.CPU_COLUMNS)
    assert text[1].split() == ["aten::mm", "2", "40.0", "45.5", "1024"]
    assert len({len(line) for line in text}) == 1  # aligned: numbers to the right
    tsv = table.rendered(rows, table.CPU_COLUMNS, "tsv")
    assert isinstance(tsv, Text) and tsv.splitlines()[2] == "aten::add\t5\t10.0\t10.0\t64"
    assert table.rendered(rows, table.CPU_COLUMNS, "json") == rows
