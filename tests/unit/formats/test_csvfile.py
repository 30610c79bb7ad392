"""csvfile: numpy's fast reader and the csv-module pass that locates problems agree; columns by name
or index; empty cells are NaN; integers stay exact."""
import numpy as np
import pytest

from torchsh.formats import csvfile
from torchsh.errors import TorchshError


# -- load_csv: numpy's fast reader and the csv-module pass that locates problems agree ----------------
def _csv(tmp_path, text, name="d.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_load_csv_header_detection_needs_every_first_row_cell_to_be_text(tmp_path):
    assert csvfile.load_csv(_csv(tmp_path, "a,b\n1,2\n"))[0].tolist() == [1.0, 2.0]
    assert csvfile.load_csv(_csv(tmp_path, ",b\n1,2\n3,4\n"))[0].tolist() == [[1.0, 2.0], [3.0, 4.0]]  # index column
    with pytest.raises(TorchshError) as e:  # text beside numbers is a bad cell, not a header
        csvfile.load_csv(_csv(tmp_path, "a,2\n1,2\n"))
    assert e.value.code == "file_error" and "row 1 (line 1), column 0: 'a' is not a number" in e.value.message


def test_load_csv_groups_by_name_and_index_keep_loadtxts_shapes(tmp_path):
    path = _csv(tmp_path, "# made by hand\nx1,x2,y\n1,2,3\n4,5,6\n")
    x, y, last = csvfile.load_csv(path, [["x2", "0"], ["y"], ["-1"]])
    assert x.tolist() == [[2.0, 1.0], [5.0, 4.0]] and y.tolist() == [3.0, 6.0] and last.tolist() == [3.0, 6.0]
    assert y.shape == np.loadtxt(path, delimiter=",", skiprows=2, usecols=[2], ndmin=1).shape


def test_load_csv_slow_pass_equals_numpy_where_both_read(tmp_path):
    rows = np.random.default_rng(5).standard_normal((20, 3))
    text = "\n".join(",".join(repr(float(v)) for v in row) for row in rows)
    full = csvfile.load_csv(_csv(tmp_path, text + "\n"))[0]
    holed = csvfile.load_csv(_csv(tmp_path, text + "\n1,,2\n", "holes.csv"))[0]  # an empty cell: the csv-module pass
    assert np.array_equal(full, rows) and np.array_equal(holed[:20], rows)
    assert np.isnan(holed[20, 1]) and holed[20, 2] == 2.0


def test_load_csv_integers_parse_exactly_and_refuse_fractions(tmp_path):
    big = 2 ** 53 + 1
    assert csvfile.load_csv(_csv(tmp_path, "%d,1\n" % big), integer=True)[0].tolist() == [big, 1]
    with pytest.raises(TorchshError) as e:
        csvfile.load_csv(_csv(tmp_path, "1,2\n3,4.5\n"), integer=True)
    assert "row 2 (line 2), column 1: '4.5' is not an integer" in e.value.message


def test_load_csv_of_an_empty_file_is_a_file_error(tmp_path):
    with pytest.raises(TorchshError) as e:
        csvfile.load_csv(_csv(tmp_path, "\n# nothing\n"))
    assert e.value.code == "file_error" and "holds no rows" in e.value.message
