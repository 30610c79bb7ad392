"""Nushell: `torch data open` of a .npy and `torch data info` as a native record; a csv with its header."""
import numpy as np


def test_nu_opens_an_npy_and_reads_data_info_as_a_record(nu, sh):
    path = sh.tmp("x.npy")
    np.save(path, np.zeros((6, 4), np.float32))
    got = nu.json("torch data open '%s' | torch data info" % path)
    assert got["length"] == 6
    assert [(f["shape"], f["dtype"]) for f in got["fields"]] == [([4], "float32")]


def test_nu_csv_target_keeps_the_header_detection_of_torch_load(nu, sh):
    path = sh.tmp("t.csv")
    with open(path, "w") as f:
        f.write("a,b,y\n1,2,0\n3,4,1\n")
    got = nu.json("torch data open '%s' --target y --target_dtype int64 | torch data head" % path)
    assert got == [[[1.0, 2.0], 0], [[3.0, 4.0], 1]]


def test_nu_text_labels_are_classes_and_a_bad_cell_is_named_by_row_and_column(nu, sh):
    good, bad = sh.tmp("iris.csv"), sh.tmp("bad.csv")
    with open(good, "w") as f:
        f.write("petal,color,species\n1.5,red,setosa\n2.5,blue,virginica\n0.5,red,setosa\n")
    with open(bad, "w") as f:
        f.write("petal,species\n" + "".join("%d.5,a\n" % i for i in range(6)) + "oops,b\n")
    got = nu.json("""
let d = (torch data open '%s' --target species --onehot color)
{info: (torch data info $d), items: (torch data head $d),
 err: (try { torch data open '%s' --target species } catch {|e| {msg: $e.msg, code: $e.details.code} }),
 text: (try { torch data open '%s' --target species } catch {|e| {msg: $e.msg, help: $e.details.help?} })}""" % (good, bad, good))
    assert got["info"]["classes"] == ["setosa", "virginica"] and got["info"]["categories"] == {"color": ["blue", "red"]}
    assert got["items"] == [[[1.5, 0.0, 1.0], 0], [[2.5, 1.0, 0.0], 1], [[0.5, 0.0, 1.0], 0]]
    assert "row 7 (line 8), column 0 (petal): 'oops' is not a number" in got["err"]["msg"]
    assert got["err"]["code"] == "torchsh::file_error"
    assert "column 'color' holds text" in got["text"]["msg"] and "--onehot color" in str(got["text"])
