"""`torch load data.csv`: header rows, --columns groups, --delimiter, --dtype, and cells that are no number.

The oracle is numpy.loadtxt on the same file (then torch.from_numpy), compared bit for bit.
"""
import numpy as np
import pytest
import torch

from torchsh import protocol

FILE_ERROR_EXIT = protocol.exit_status("file_error")
USAGE_EXIT = protocol.exit_status("bad_argument")


def _write(path, text):
    path.write_text(text)
    return str(path)


def _numpy(path, **kw):
    return torch.from_numpy(np.loadtxt(path, delimiter=kw.pop("delimiter", ","), ndmin=1, **kw))


@pytest.fixture
def data_csv(tmp_path):
    """A 50 x 4 CSV with a header row x1,x2,x3,y and full-precision random values."""
    values = np.random.default_rng(11).standard_normal((50, 4))
    path = tmp_path / "data.csv"
    np.savetxt(path, values, delimiter=",", fmt="%.17g", header="x1,x2,x3,y", comments="")
    return str(path)


def test_detected_header_row_is_skipped_and_values_equal_numpy(sh, data_csv):
    got = sh.fetch(sh("torch load %s" % data_csv))
    assert got.dtype == torch.float32
    assert torch.equal(got, _numpy(data_csv, skiprows=1, dtype=np.float32))


def test_repeated_columns_give_one_handle_each_in_order(sh, data_csv):
    handles = sh("torch load %s --columns x1,x3 --columns y" % data_csv).split("\n")
    assert len(handles) == 2
    x, y = (sh.fetch(h) for h in handles)
    assert torch.equal(x, _numpy(data_csv, skiprows=1, usecols=[0, 2], dtype=np.float32))
    assert torch.equal(y, _numpy(data_csv, skiprows=1, usecols=[3], dtype=np.float32))
    assert list(y.shape) == [50]


def test_columns_by_zero_based_index_equal_columns_by_name(sh, data_csv):
    by_index = sh.fetch(sh("torch load %s --columns 3,0" % data_csv))
    by_name = sh.fetch(sh("torch load %s --columns y,x1" % data_csv))
    assert torch.equal(by_index, by_name)
    assert torch.equal(by_index, _numpy(data_csv, skiprows=1, usecols=[3, 0], dtype=np.float32))


def test_dtype_parses_float64_and_int64_exactly(sh, data_csv, tmp_path):
    got = sh.fetch(sh("torch load %s --dtype float64" % data_csv))
    assert torch.equal(got, _numpy(data_csv, skiprows=1, dtype=np.float64))
    ints = _write(tmp_path / "ints.csv", "a,b\n9007199254740993,-3\n7,8\n")
    got = sh.fetch(sh("torch load %s --dtype int64" % ints))
    assert got.dtype == torch.int64 and got.tolist() == [[9007199254740993, -3], [7, 8]]


def test_header_flags_override_detection(sh, tmp_path):
    numeric_header = _write(tmp_path / "years.csv", "2019,2020\n1.5,2.5\n3.5,4.5\n")
    assert sh("torch load %s | torch value" % numeric_header) == "[[2019.0,2020.0],[1.5,2.5],[3.5,4.5]]"
    assert sh("torch load %s --header | torch value" % numeric_header) == "[[1.5,2.5],[3.5,4.5]]"
    assert sh("torch load %s --columns 2020 --header | torch value" % numeric_header) == "[2.5,4.5]"
    texty = _write(tmp_path / "texty.csv", "a,b\n1,2\n")
    for flag in ("--no-header", "--no_header", "--header false"):
        r = sh.run("torch load %s %s" % (texty, flag))
        assert r.code == FILE_ERROR_EXIT and "row 1 (line 1), column 0: 'a' is not a number" in r.err, flag


def test_non_numeric_cell_is_one_line_naming_row_column_and_text(sh, tmp_path):
    path = _write(tmp_path / "bad.csv", "x1,x2,y\n1,2,3\n4,oops,6\n")
    r = sh.run("torch load %s" % path)
    assert r.code == FILE_ERROR_EXIT and r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("torch: load: ")
    assert "row 2 (line 3), column 1 (x2): 'oops' is not a number" in r.err and r.err.rstrip().endswith("[file_error]")
    # the bad column left out, the file loads
    assert sh("torch load %s --columns x1,y | torch value" % path) == "[[1.0,3.0],[4.0,6.0]]"


def test_delimiter_flag_reads_semicolons_and_tabs(sh, tmp_path):
    semi = _write(tmp_path / "semi.csv", "a;b\n1.25;2\n3;4\n")
    assert sh("torch load %s --delimiter ';' | torch value" % semi) == "[[1.25,2.0],[3.0,4.0]]"
    tabs = _write(tmp_path / "tabs.csv", "a\tb\n1.25\t2\n3\t4\n")
    assert sh("torch load %s --delimiter tab | torch value" % tabs) == "[[1.25,2.0],[3.0,4.0]]"
    assert sh("torch load %s --delimiter $'\\t' --columns b | torch value" % tabs) == "[2.0,4.0]"


def test_empty_cells_are_nan_for_floats_and_an_error_for_integers(sh, tmp_path):
    path = _write(tmp_path / "holes.csv", "a,b\n1,\n,4\n")
    got = sh.fetch(sh("torch load %s" % path))
    assert torch.equal(torch.isnan(got), torch.tensor([[False, True], [True, False]]))
    r = sh.run("torch load %s --dtype int64" % path)
    assert r.code == FILE_ERROR_EXIT and "row 1 (line 2), column 1 (b) is empty" in r.err


def test_quoted_fields_and_names_are_read(sh, tmp_path):
    path = _write(tmp_path / "quoted.csv", '"x 1","y"\n"1.5","2"\n"-3",4e2\n')
    assert sh("torch load %s --columns 'x 1' | torch value" % path) == "[1.5,-3.0]"
    assert sh("torch load %s | torch value" % path) == "[[1.5,2.0],[-3.0,400.0]]"


def test_ragged_row_is_named_by_line(sh, tmp_path):
    path = _write(tmp_path / "ragged.csv", "1,2,3\n4,5\n")
    r = sh.run("torch load %s" % path)
    assert r.code == FILE_ERROR_EXIT and "line 2 has 2 cells, expected 3" in r.err


def test_unknown_column_names_the_columns_there_are(sh, data_csv):
    r = sh.run("torch load %s --columns x1,z" % data_csv)
    assert r.code == USAGE_EXIT and "no column 'z'" in r.err and "x1, x2, x3, y" in r.err and "[bad_argument]" in r.err


def test_csv_flags_on_other_formats_are_refused(sh, tmp_path):
    np.save(tmp_path / "a.npy", np.ones(3, dtype=np.float32))
    r = sh.run("torch load %s --columns 0" % (tmp_path / "a.npy"))
    assert r.code == USAGE_EXIT and "--columns applies to .csv files only" in r.err


def test_large_csv_equals_numpy(sh, tmp_path):
    values = np.random.default_rng(3).standard_normal((60000, 10))
    path = tmp_path / "big.csv"
    np.savetxt(path, values, delimiter=",", header=",".join("x%d" % i for i in range(10)), comments="")
    x, y = sh("torch load %s --columns 0,1,2,3,4,5,6,7,8 --columns x9" % path).split("\n")
    assert torch.equal(sh.fetch(x), _numpy(str(path), skiprows=1, usecols=range(9), dtype=np.float32))
    assert torch.equal(sh.fetch(y), _numpy(str(path), skiprows=1, usecols=[9], dtype=np.float32))
