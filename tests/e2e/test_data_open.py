"""`torch data open FILE…` through real bash, for every format: the items `data head` prints equal the
same data read in-process (numpy, safetensors, pyarrow, Pillow), fields side by side, the target last.
"""
import json
import os

import numpy as np
import pytest
import torch


def head(sh, handle, n=1000):
    """The items of a dataset as lists of tensors, from `torch data head` (float32 text reads back exactly)."""
    lines = sh("torch data head %s %d" % (handle, n)).split("\n")
    return [json.loads(line) for line in lines if line]


def info(sh, handle):
    return json.loads(sh("torch data info --json %s" % handle))


def census_row(sh, handle):
    return next(r for r in json.loads(sh("torch tensors --json")) if r["handle"] == handle)


def assert_items(got, fields):
    """got: items from head; fields: the expected tensors, one per field (item i is field[i] of each)."""
    assert len(got) == len(fields[0])
    for i, item in enumerate(got):
        assert len(item) == len(fields)
        for value, field in zip(item, fields):
            want = field[i]
            assert torch.equal(torch.tensor(value, dtype=want.dtype), want), (i, value, want)


def test_npy_files_side_by_side_are_memory_mapped_fields(sh):
    x, y = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32), np.arange(7) % 3
    xp, yp = sh.tmp("x.npy"), sh.tmp("y.npy")
    np.save(xp, x)
    np.save(yp, y)
    d = sh("torch data open %s %s" % (xp, yp))
    assert d.startswith("data://")
    assert_items(head(sh, d), [torch.from_numpy(x), torch.from_numpy(y)])
    assert info(sh, d) == {"length": 7, "fields": [{"name": os.path.basename(xp)[:-4], "shape": [3], "dtype": "float32"},
                                                  {"name": os.path.basename(yp)[:-4], "shape": [], "dtype": "int64"}]}
    row = census_row(sh, d)
    assert row["bytes"] == 0 and row["mapped"] == os.path.getsize(xp) + os.path.getsize(yp)
    assert row["length"] == 7


@pytest.mark.parametrize("ext", ["npy", "safetensors"])
def test_a_mapped_file_written_over_in_place_is_a_file_error_and_the_daemon_lives(sh, ext):
    from safetensors.torch import save_file
    p, small = sh.tmp("big." + ext), sh.tmp("small." + ext)
    x = np.random.default_rng(0).standard_normal((1 << 14, 16)).astype(np.float32)
    for path, a in ((p, x), (small, x[:4])):
        np.save(path, a) if ext == "npy" else save_file({"x": torch.from_numpy(a)}, path)
    d = sh("torch data open %s" % p)
    assert_items(head(sh, d, 2), [torch.from_numpy(x[:2])])
    sh("cp %s %s" % (small, p))  # the same file, cut and rewritten (as np.save over it does too)
    r = sh.run("torch data head %s 20000" % d)
    assert r.code != 0 and "[file_error]" in r.err and "cut short" in r.err, r.err  # a mapped read: SIGBUS
    assert sh("torch value $(torch add $(torch ones 1) $(torch ones 1))") == "[2.0]"  # the daemon lives


def test_files_of_different_lengths_are_one_line_error(sh):
    xp, yp = sh.tmp("x.npy"), sh.tmp("y.npy")
    np.save(xp, np.zeros((4, 2), np.float32))
    np.save(yp, np.zeros(5, np.int64))
    r = sh.run("torch data open %s %s" % (xp, yp))
    assert r.code == 4 and r.out == ""
    assert r.err.count("\n") == 1 and "different lengths" in r.err and "4" in r.err and "5" in r.err
    assert r.err.rstrip().endswith("[shape_mismatch]")


def test_npz_arrays_are_fields_and_target_goes_last(sh):
    p = sh.tmp("d.npz")
    y, x = np.array([1, 0, 1]), np.arange(6.0).reshape(3, 2)
    np.savez(p, y=y, x=x)
    d = sh("torch data open %s --target y" % p)
    assert [f["name"] for f in info(sh, d)["fields"]] == ["x", "y"]
    assert_items(head(sh, d), [torch.from_numpy(x), torch.from_numpy(y)])
    assert census_row(sh, d)["bytes"] == x.nbytes + y.nbytes  # npz members are read whole: held
    only = sh("torch data open %s --columns x" % p)
    assert_items(head(sh, only), [torch.from_numpy(x)])


def test_safetensors_fields_read_lazily(sh):
    from safetensors.torch import save_file
    p = sh.tmp("d.safetensors")
    x, y = torch.randn(6, 4, dtype=torch.float64), torch.arange(6, dtype=torch.int32)
    save_file({"x": x, "y": y}, p)
    d = sh("torch data open %s --columns x --target y" % p)
    assert_items(head(sh, d), [x, y])
    row = census_row(sh, d)
    assert row["bytes"] == 0 and row["mapped"] == x.nbytes + y.nbytes
    r = sh.run("torch data open %s --columns z" % p)
    assert r.code == 2 and "has no array 'z'" in r.err and "x y" in r.err


def test_csv_reads_as_torch_load_with_features_and_target(sh):
    p = sh.tmp("t.csv")
    with open(p, "w") as f:
        f.write("a,b,label\n0.5,1.25,0\n2,3.5,2\n-1,0.1,1\n")
    table = np.loadtxt(p, delimiter=",", skiprows=1)
    d = sh("torch data open %s --target label --target_dtype int64" % p)
    assert info(sh, d)["fields"] == [{"name": "features", "shape": [2], "dtype": "float32"},
                                     {"name": "label", "shape": [], "dtype": "int64"}]
    assert_items(head(sh, d), [torch.from_numpy(table[:, :2]).float(), torch.from_numpy(table[:, 2]).long()])
    # the same column groups as `torch load --columns`, each a field of rows × columns (pandas' df[['label']])
    loaded = sh("torch load %s --columns b,a --columns label" % p).split("\n")
    d2 = sh("torch data open %s --columns b,a --columns label" % p)
    assert_items(head(sh, d2), [sh.fetch(h).reshape(3, -1) for h in loaded])


def test_csv_options_of_torch_load_apply(sh):
    p = sh.tmp("t.csv")
    with open(p, "w") as f:
        f.write("1;2;3\n4;5;6\n")
    d = sh("torch data open %s --delimiter ';' --no-header --target 2 --dtype float64" % p)
    assert_items(head(sh, d), [torch.tensor([[1.0, 2.0], [4.0, 5.0]], dtype=torch.float64),
                               torch.tensor([3, 6])])  # an all-integer target is int64, as pandas reads it
    r = sh.run("torch data open %s --delimiter ';' --target nope" % p)
    assert r.code == 2 and "has no column 'nope'" in r.err


def test_parquet_columns_and_target_keep_the_label_dtype(sh):
    import pyarrow as pa
    import pyarrow.parquet as pq
    p = sh.tmp("t.parquet")
    pq.write_table(pa.table({"a": [1.5, 2.5, 3.5], "b": [4, 5, 6], "name": ["p", "q", "r"], "y": [2, 0, 1]}), p)
    d = sh("torch data open %s --columns a,b --target y" % p)
    assert info(sh, d)["fields"] == [{"name": "a,b", "shape": [2], "dtype": "float32"},
                                     {"name": "y", "shape": [], "dtype": "int64"}]
    assert_items(head(sh, d), [torch.tensor([[1.5, 4], [2.5, 5], [3.5, 6]]), torch.tensor([2, 0, 1])])
    r = sh.run("torch data open %s --target y" % p)  # every other column, and `name` is text
    assert r.code == 2 and "column 'name' holds text, not numbers" in r.err and "--onehot name" in r.err


def _image_folder(root):
    from PIL import Image
    rng = np.random.default_rng(1)
    for cls, n in (("cat", 2), ("dog", 3)):
        os.makedirs(os.path.join(root, cls, "sub"))
        for k in range(n):
            sub = "sub" if k == 2 else ""
            Image.fromarray(rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)).save(
                os.path.join(root, cls, sub, "%d.png" % k))
        with open(os.path.join(root, cls, "notes.txt"), "w") as f:
            f.write("not an image")
    Image.fromarray(rng.integers(0, 256, (5, 4), dtype=np.uint8)).save(os.path.join(root, "dog", "gray.png"))


def _image_folder_items(root):
    """ImageFolder's samples and ToTensor()'s values, computed in-process the torchvision way."""
    from PIL import Image
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    items = []
    for index, cls in enumerate(classes):
        for where, _, names in sorted(os.walk(os.path.join(root, cls))):
            for name in sorted(names):
                if name.endswith(".png"):
                    rgb = np.array(Image.open(os.path.join(where, name)).convert("RGB"))
                    items.append((torch.from_numpy(rgb).permute(2, 0, 1).float() / 255, torch.tensor(index)))
    return classes, items


def test_image_folder_items_are_rgb_chw_in_unit_range_with_class_indices(sh):
    root = sh.tmp("images")
    _image_folder(root)
    d = sh("torch data open %s" % root)
    classes, items = _image_folder_items(root)
    got = info(sh, d)
    assert got["classes"] == classes == ["cat", "dog"] and got["length"] == 6
    assert got["fields"] == [{"name": "image", "shape": [3, 5, 4], "dtype": "float32"},
                             {"name": "class", "shape": [], "dtype": "int64"}]
    assert_items(head(sh, d), [torch.stack([i for i, _ in items]), torch.stack([c for _, c in items])])
    assert "classes  cat dog" in sh("torch data info %s" % d)


def test_unknown_file_type_and_missing_file_are_named(sh):
    r = sh.run("torch data open notes.txt")
    assert r.code == 2 and "unknown file type '.txt'" in r.err and ".parquet" in r.err
    r = sh.run("torch data open %s" % sh.tmp("gone.npy"))
    assert r.code == 6 and "no such file" in r.err and r.err.rstrip().endswith("[file_error]")


@pytest.mark.parametrize("module,what,extra", [("pyarrow", "t.parquet", "parquet"), ("PIL", "images", "images")])
def test_missing_extra_names_the_pip_install(fresh_sh, module, what, extra):
    """A daemon whose Python cannot import the extra (a shim module on PYTHONPATH raises ImportError)."""
    s = fresh_sh(start=False)
    shim = os.path.join(s.folder, "shim")
    os.makedirs(shim, exist_ok=True)
    with open(os.path.join(shim, module + ".py"), "w") as f:
        f.write("raise ImportError('%s is not installed (test shim)')\n" % module)
    os.makedirs(os.path.join(s.folder, "images", "cat"), exist_ok=True)
    with open(os.path.join(s.folder, "t.parquet"), "wb") as f:
        f.write(b"PAR1")
    s.env["PYTHONPATH"] = shim
    s("torch daemon start")
    r = s.run("torch data open %s" % what)
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
    assert "pip install 'torchsh[%s]'" % extra in r.err and r.err.rstrip().endswith("[missing_extra]")


def test_image_folder_skips_a_fifo_named_like_an_image(sh):
    root = sh.tmp("images")
    _image_folder(root)
    os.mkfifo(os.path.join(root, "cat", "blocked.png"))  # reading it would wait for a writer forever
    d = sh("torch data open %s" % root)
    assert info(sh, d)["length"] == 6 and len(head(sh, d)) == 6
