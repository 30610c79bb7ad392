"""`torch data open` of .csv and .parquet tables through real bash, read the way pandas reads them: text labels
become class indices (sorted names, as torchvision's ImageFolder), an all-integer target int64, one feature
column rows of [1] (df[['x']]), text features refused by name or one-hot encoded (--onehot), and a bad
cell named by row and column. The oracle is the same table read in-process (csv module, numpy)."""
import csv
import json

import numpy as np
import torch
from support.second_daemon import SecondDaemon

IRIS = ("sepal,petal,color,species\n5.1,1.4,red,setosa\n4.9,1.3,blue,virginica\n6.0,4.5,red,versicolor\n"
        "5.5,2.0,green,setosa\n6.3,5.0,blue,virginica\n")


def _write(sh, name, text):
    path = sh.tmp(name)
    with open(path, "w") as f:
        f.write(text)
    return path


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def head(sh, handle):
    return [json.loads(line) for line in sh("torch data head %s 1000" % handle).split("\n") if line]


def info(sh, handle):
    return json.loads(sh("torch data info --json %s" % handle))


def test_a_text_target_becomes_class_indices_of_the_sorted_names(sh):
    path = _write(sh, "iris.csv", IRIS)
    rows = _rows(path)
    classes = sorted({r["species"] for r in rows})  # ImageFolder's rule: sorted names, index = position
    d = sh("torch data open %s --target species --columns sepal,petal" % path)
    got = info(sh, d)
    assert got["classes"] == classes == ["setosa", "versicolor", "virginica"]
    assert got["fields"] == [{"name": "sepal,petal", "shape": [2], "dtype": "float32"},
                             {"name": "species", "shape": [], "dtype": "int64"}]
    items = head(sh, d)
    assert [y for _, y in items] == [classes.index(r["species"]) for r in rows]
    want_x = torch.tensor([[float(r["sepal"]), float(r["petal"])] for r in rows])
    assert torch.equal(torch.tensor([x for x, _ in items]), want_x)
    assert "classes  setosa versicolor virginica" in sh("torch data info %s" % d)


def test_an_all_integer_target_is_int64_and_one_feature_column_keeps_its_axis(sh):
    path = _write(sh, "xy.csv", "x,y\n0.5,0\n1.5,2\n2.5,1\n")
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    d = sh("torch data open %s --columns x --target y" % path)
    assert info(sh, d)["fields"] == [{"name": "x", "shape": [1], "dtype": "float32"},  # df[['x']]
                                     {"name": "y", "shape": [], "dtype": "int64"}]    # df['y']
    items = head(sh, d)
    assert torch.equal(torch.tensor([x for x, _ in items]), torch.from_numpy(table[:, :1]).float())
    assert torch.equal(torch.tensor([y for _, y in items]), torch.from_numpy(table[:, 1]).long())
    alone = sh("torch data open %s --target y" % path)  # every other column: still rows of [1]
    assert [f["shape"] for f in info(sh, alone)["fields"]] == [[1], []]
    floats = sh("torch data open %s --target x" % path)  # a column with fractions stays float32
    assert info(sh, floats)["fields"][-1] == {"name": "x", "shape": [], "dtype": "float32"}


def test_a_text_feature_is_refused_by_name_and_onehot_encodes_it_with_sorted_categories(sh):
    path = _write(sh, "iris.csv", IRIS)
    r = sh.run("torch data open %s --target species" % path)
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1, r.err
    assert "column 'color' holds text" in r.err and "--onehot color" in r.err and r.err.rstrip().endswith("[bad_argument]")
    d = sh("torch data open %s --target species --onehot color" % path)
    rows = _rows(path)
    categories = sorted({r["color"] for r in rows})
    got = info(sh, d)
    assert got["categories"] == {"color": categories} and got["fields"][0]["shape"] == [2 + len(categories)]
    want = torch.tensor([[float(r["sepal"]), float(r["petal"])] + [float(r["color"] == c) for c in categories]
                         for r in rows])
    assert torch.equal(torch.tensor([x for x, _ in head(sh, d)]), want)
    r = sh.run("torch data open %s --target species --onehot species" % path)
    assert r.code == 2 and "--onehot species" in r.err and "no such feature column" in r.err


def test_a_non_number_is_named_by_row_and_column(sh):
    lines = ["sepal,petal,species"] + ["%d.5,%d.25,a" % (i, i) for i in range(9)]
    lines[7] = "6.5,oops,b"  # data row 7
    path = _write(sh, "bad.csv", "\n".join(lines) + "\n")
    r = sh.run("torch data open %s --target species" % path)
    assert r.code == 6 and r.out == "" and r.err.count("\n") == 1, r.err
    assert "row 7 (line 8), column 1 (petal): 'oops' is not a number" in r.err and r.err.rstrip().endswith("[file_error]")
    labels = _write(sh, "labels.csv", "x,y\n1,0\n2,1\n3,two\n")  # numbers with one word among them: a typo
    r = sh.run("torch data open %s --target y" % labels)
    assert r.code == 6 and "row 3 (line 4), column 1 (y): 'two' is not a number" in r.err
    unnamed = _write(sh, "unnamed.csv", "x,y\n1,cat\n2,\n")  # a class name missing
    r = sh.run("torch data open %s --target y" % unnamed)
    assert r.code == 6 and "row 2 (line 3), column 1 (y) is empty" in r.err and "class name" in r.err


def test_parquet_text_target_and_onehot_read_as_csv_does(sh):
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = sh.tmp("t.parquet")
    pq.write_table(pa.table({"a": [1.5, 2.5, 3.5], "kind": ["q", "p", "q"], "label": ["dog", "cat", "dog"]}), path)
    d = sh("torch data open %s --target label --onehot kind" % path)
    got = info(sh, d)
    assert got["classes"] == ["cat", "dog"] and got["categories"] == {"kind": ["p", "q"]}
    assert head(sh, d) == [[[1.5, 0.0, 1.0], 1], [[2.5, 1.0, 0.0], 0], [[3.5, 0.0, 1.0], 1]]
    one = sh("torch data open %s --columns a --target label" % path)
    assert [f["shape"] for f in info(sh, one)["fields"]] == [[1], []]


def test_classes_and_categories_survive_a_split_and_a_session_save(sh, tmp_path):
    path = _write(sh, "iris.csv", IRIS)
    own = SecondDaemon(sh, "tables")
    try:
        d = own("torch data open %s --target species --onehot color" % path)
        train = own("torch data split %s 3 2 --seed 0" % d).split("\n")[0]
        assert json.loads(own("torch data info --json %s" % train))["classes"] == ["setosa", "versicolor", "virginica"]
        own("torch session save %s" % (tmp_path / "s"))
        own("torch daemon stop")
        own("torch session load %s" % (tmp_path / "s"))
        got = json.loads(own("torch data info --json %s" % train))
        assert got["classes"] == ["setosa", "versicolor", "virginica"]
        assert got["categories"] == {"color": ["blue", "green", "red"]}
    finally:
        own.stop()


def test_a_table_opened_whole_gives_one_row_per_item_even_with_one_column_or_one_row(sh):
    """pandas' df.values is rows × columns: numpy.loadtxt's squeezing (one column → 1-D, one row → 1-D) made
    a one-column table items of [] (a `linear 1 k` model then failed) and a one-row table one item per cell."""
    column = _write(sh, "column.csv", "x\n1.5\n2.5\n3.5\n")
    row = _write(sh, "row.csv", "1,2,3\n")
    for path, length, shape in ((column, 3, [1]), (row, 1, [3])):
        d = sh("torch data open %s" % path)
        (field,) = info(sh, d)["fields"]
        assert info(sh, d)["length"] == length and field["shape"] == shape, info(sh, d)
    assert head(sh, sh("torch data open %s" % column)) == [[[1.5]], [[2.5]], [[3.5]]]
    assert sh("torch load %s | torch value" % column) == "[1.5,2.5,3.5]"  # `torch load` keeps numpy's shape
