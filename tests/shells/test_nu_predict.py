"""Nushell: `torch predict MODEL DATASET` is a native table (one record per item), its rows joinable to the
input by `row`; --out writes the same rows to a file."""


def test_nu_predict_is_a_table_of_rows_and_classes(nu, sh):
    path, out = sh.tmp("t.csv"), sh.tmp("p.csv")
    with open(path, "w") as f:
        f.write("a,b,kind\n1,2,x\n3,4,y\n5,6,x\n")
    got = nu.json("""
let m = (torch nn linear 2 2)
let d = (torch data open '%s' --target kind)
{rows: (torch predict $m $d --proba), cols: (torch predict $m $d | columns),
 file: (torch predict $m $d --out '%s'; open '%s' | get prediction)}""" % (path, out, out))
    assert [r["row"] for r in got["rows"]] == [0, 1, 2]
    assert all(r["prediction"] in ("x", "y") and abs(r["x"] + r["y"] - 1) < 1e-6 for r in got["rows"])
    assert got["cols"] == ["row", "prediction"]
    assert got["file"] == [r["prediction"] for r in got["rows"]]
