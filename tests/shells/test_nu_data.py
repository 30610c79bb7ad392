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
