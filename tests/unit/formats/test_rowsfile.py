"""Rows written from their columns (formats/rowsfile.py) are the bytes of one row at a time: the csv module
over str(np.float32(v)) cells, json.dumps of each row's dict, tab-joined text, and parquet from the rows' dicts;
through floats that are not plain (NaN, ±inf, -0.0, tiny and huge) and names that need quoting or escaping."""
import csv
import io
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from torchsh.formats import rowsfile

NAMES = ["row", "prediction", "a,b", 'say "hi"', "100%", "é"]
FLOATS = [0.1, float("nan"), float("inf"), -float("inf"), -0.0, 1e-45, 3.4028234663852886e38, 1.0, 123456.789]


def _rows(float32):
    g = np.random.default_rng(0)
    n = len(FLOATS) + 20
    floats = FLOATS + g.standard_normal(20).tolist()
    if float32:
        floats = [float(np.float32(v)) for v in floats]
    labels = ["cat", "a,b", 'q"t', "100%s", "é", " lead"] * n
    values = [list(range(n)), labels[:n], floats, floats[::-1], [v * 1e-30 for v in floats], floats[3:] + floats[:3]]
    return rowsfile.Rows(NAMES, values, float32=float32), [dict(zip(NAMES, r)) for r in zip(*values)]


def _cell(v, float32):
    if isinstance(v, float):
        return str(np.float32(v)) if float32 else repr(v)
    return str(v)


@pytest.mark.parametrize("float32", [True, False])
def test_csv_jsonl_parquet_and_text_from_columns_are_the_bytes_of_row_by_row(tmp_path, float32):
    rows, dicts = _rows(float32)
    want_csv = io.StringIO(newline="")
    writer = csv.writer(want_csv, lineterminator="\n")
    writer.writerow(NAMES)
    writer.writerows([_cell(r[c], float32) for c in NAMES] for r in dicts)
    want_jsonl = "".join(json.dumps(r, allow_nan=True) + "\n" for r in dicts)
    want_text = "\n".join(["\t".join(NAMES)] + ["\t".join(_cell(r[c], float32) for c in NAMES) for r in dicts]) + "\n"
    for ext in ("csv", "jsonl", "parquet"):
        rowsfile.write(str(tmp_path / ("p." + ext)), rows)
    with open(tmp_path / "p.csv", newline="") as f:
        assert f.read() == want_csv.getvalue()
    with open(tmp_path / "p.jsonl") as f:
        assert f.read() == want_jsonl
    assert rows.text() == want_text
    got = pq.read_table(tmp_path / "p.parquet").to_pylist()
    assert len(got) == len(dicts) and all(_same(g, w) for g, w in zip(got, dicts))
    assert all(_same(g, w) for g, w in zip(rows.wire_form(), dicts)) and list(rows.wire_form()[0]) == NAMES


def _same(a, b):
    return list(a) == list(b) and all(x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
                                      for x, y in zip(a.values(), b.values()))


def test_no_rows_write_the_header_alone(tmp_path):
    rows = rowsfile.Rows(["row", "prediction"], [[], []])
    rowsfile.write(str(tmp_path / "p.csv"), rows)
    assert (tmp_path / "p.csv").read_text() == "row,prediction\n" and rows.text() == "row\tprediction\n"
    assert rows.wire_form() == [] and len(rows) == 0
