"""`torch data info|head|split|transform` through real bash, against in-process PyTorch; data:// objects
in the census, in scopes and under `free`."""
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import torch.utils.data


def npy(sh, array, name="x.npy"):
    p = sh.tmp(name)
    np.save(p, array)
    return p


def items(sh, handle, n=1000):
    return [json.loads(line) for line in sh("torch data head %s %d" % (handle, n)).split("\n") if line]


def field(got, k, dtype):
    """Field k of every item, stacked, in the dtype it was printed from (float32 text reads back exactly)."""
    return torch.stack([torch.tensor(item[k], dtype=dtype) for item in got])


def test_info_prints_aligned_fields_and_json_under_json(sh):
    d = sh("torch data open %s %s" % (npy(sh, np.zeros((5, 2, 3), np.float32), "image.npy"),
                                      npy(sh, np.zeros(5, np.int64), "label.npy")))
    lines = sh("torch data info %s" % d).split("\n")
    assert lines[0].split() == ["length", "5"]
    assert [line.split()[1:] for line in lines[1:]] == [["SHAPE", "DTYPE"], ["[2,3]", "float32"], ["[]", "int64"]]
    assert lines[2].split()[0].endswith("image") and lines[3].split()[0].endswith("label")  # the files' names
    assert lines[2].index("[2,3]") == lines[1].index("SHAPE")  # aligned columns
    assert json.loads(sh("torch data info %s --json" % d))["fields"][0] == {"name": lines[2].split()[0],
                                                                            "shape": [2, 3], "dtype": "float32"}


def test_head_prints_n_items_one_a_line_like_torch_value(sh):
    x = np.array([[0.1, float("nan")], [1e6, -2.5], [3, 4]], np.float32)
    d = sh("torch data open %s" % npy(sh, x))
    out = sh("torch data head %s 2" % d).split("\n")
    assert out == ['[[0.1,"NaN"]]', "[[1e+06,-2.5]]"]
    assert out[0][1:-1] == sh("torch value $(torch tensor '[0.1,\"NaN\"]' --dtype float32)")
    assert len(items(sh, d)) == 3 and sh("torch data head %s 0" % d) == ""
    assert json.loads(sh("torch data head %s 2 --json" % d)) == [[[0.1, "NaN"]], [[1e6, -2.5]]]


@pytest.mark.parametrize("lengths", [(0.8, 0.2), (0.5, 0.3, 0.2), (7, 3)])
def test_split_draws_the_index_sets_of_random_split(sh, lengths):
    d = sh("torch data open %s" % npy(sh, np.arange(10)))
    parts = sh("torch data split %s %s --seed 7" % (d, " ".join(map(str, lengths)))).split("\n")
    want = torch.utils.data.random_split(range(10), list(lengths), generator=torch.Generator().manual_seed(7))
    assert len(parts) == len(want)
    for handle, subset in zip(parts, want):
        assert handle.startswith("data://")
        assert [item[0] for item in items(sh, handle)] == list(subset.indices)


def test_split_without_seed_uses_the_default_generator_as_torch_manual_seed_sets_it(sh):
    d = sh("torch data open %s" % npy(sh, np.arange(6)))
    a, _ = sh("torch manual_seed 3 && torch data split %s 0.5 0.5" % d).split("\n")
    torch.manual_seed(3)
    want = torch.utils.data.random_split(range(6), [0.5, 0.5])[0].indices
    assert [item[0] for item in items(sh, a)] == list(want)


def test_split_lengths_that_do_not_fit_are_one_line_usage_error(sh):
    d = sh("torch data open %s" % npy(sh, np.arange(6)))
    r = sh.run("torch data split %s 4 4" % d)
    assert r.code == 2 and "6 items" in r.err and r.err.count("\n") == 1


def test_transform_normalize_dtype_and_one_hot_match_pytorch(sh):
    x = np.random.default_rng(2).standard_normal((6, 3)).astype(np.float32)
    y = np.array([0, 2, 1, 1, 0, 2])
    d = sh("torch data open %s %s" % (npy(sh, x), npy(sh, y, "y.npy")))
    t = sh("torch data transform %s --mean 0.1,0.2,0.3 --std 2,3,4 --one_hot 3" % d)
    got = items(sh, t)
    mean, std = torch.tensor([0.1, 0.2, 0.3]), torch.tensor([2.0, 3.0, 4.0])
    assert torch.equal(field(got, 0, torch.float32), (torch.from_numpy(x) - mean) / std)
    assert torch.equal(field(got, 1, torch.int64), F.one_hot(torch.from_numpy(y), 3))
    f64 = sh("torch data transform %s --dtype float64" % d)
    assert json.loads(sh("torch data info %s --json" % f64))["fields"][0]["dtype"] == "float64"
    assert torch.equal(field(items(sh, f64), 0, torch.float64), torch.from_numpy(x).double())


def test_transform_resize_and_center_crop_are_torchvisions_tensor_transforms(sh):
    imgs = np.random.default_rng(3).random((2, 3, 9, 12), dtype=np.float32)
    d = sh("torch data open %s" % npy(sh, imgs))
    got = items(sh, sh("torch data transform %s --resize 6 --center_crop 4,5" % d))
    # Resize(6): shorter edge 9 -> 6, longer 12 -> int(6 * 12 / 9) = 8; CenterCrop((4, 5)) of 6x8
    want = F.interpolate(torch.from_numpy(imgs), size=(6, 8), mode="bilinear", align_corners=False, antialias=True)
    want = want[..., 1:5, 2:7]  # top = round((6 - 4) / 2) = 1, left = round((8 - 5) / 2) = round(1.5) = 2
    assert torch.equal(field(got, 0, torch.float32), want)
    padded = items(sh, sh("torch data transform %s --center_crop 11" % d))
    assert torch.equal(field(padded, 0, torch.float32), _center_crop_padded(torch.from_numpy(imgs), 11))


def _center_crop_padded(images, size):
    """torchvision's center_crop of a 9x12 image to 11x11: pad the height (1 above, 1 below), crop the width."""
    padded = F.pad(images, [0, 0, 1, 1])  # 11 x 12
    left = int(round((12 - size) / 2.0))
    return padded[..., :, left:left + size]


def test_transform_that_does_not_fit_the_items_fails_at_once(sh):
    d = sh("torch data open %s" % npy(sh, np.arange(4.0)))
    r = sh.run("torch data transform %s --one_hot 4" % d)
    assert r.code == 4 and "integer class labels" in r.err and r.err.rstrip().endswith("[dtype_error]")
    r = sh.run("torch data transform %s --resize 2" % d)
    assert r.code == 4 and "needs an image" in r.err
    r = sh.run("torch data transform %s --field 3 --dtype int32" % d)
    assert r.code == 2 and "the items have 1 field" in r.err
    r = sh.run("torch data transform %s --mean 0.5" % d)
    assert r.code == 2 and "--mean and --std" in r.err


def test_datasets_are_in_the_census_and_scopes_and_free_remove_them(sh):
    x = npy(sh, np.zeros((3, 2), np.float32))
    before = set(sh("torch tensors --kind data -q").split("\n"))
    inner = sh("torch scope -- bash -c 'd=$(torch data open %s); torch data transform $d --dtype float64 >/dev/null; "
               "torch tensors --kind data -q'" % x).split("\n")
    made = set(inner) - before
    assert len(made) == 2 and all(h.startswith("data://") for h in made)
    assert not made & set(sh("torch tensors --kind data -q").split("\n"))  # the scope's end freed them
    d = sh("torch data open %s" % x)
    t = sh("torch data transform %s --dtype float64" % d)
    rows = {r["handle"]: r for r in json.loads(sh("torch tensors --json --kind data"))}
    assert rows[d]["type"] == "FileDataset" and rows[t]["type"] == "TransformedDataset"
    assert rows[t]["mapped"] == rows[d]["mapped"] > 0  # what it reads through the dataset it wraps
    sh("torch free %s %s" % (d, t))
    assert d not in sh("torch tensors --kind data -q")
    r = sh.run("torch data info %s" % d)
    assert r.code == 3 and "unknown_handle" in r.err
