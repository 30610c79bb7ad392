"""Files: every format round-trips; paths resolve against the caller's cwd; no pickle."""
import os
import stat

import numpy as np
import pytest
import torch


@pytest.mark.parametrize("ext", ["npy", "npz", "safetensors", "pt", "pth", "csv"])
def test_save_then_load_round_trips(sh, tmp_path, ext):
    ref = torch.randn(3, 4)
    h = sh.put(ref)
    sh("torch save %s data.%s" % (h, ext), cwd=str(tmp_path))
    assert (tmp_path / ("data." + ext)).exists()
    back = sh.fetch(sh("torch load data.%s" % ext, cwd=str(tmp_path)))
    assert torch.equal(back, ref)


def test_a_saved_file_gets_the_mode_a_shell_redirect_would_give(sh, tmp_path):
    umask = os.umask(0)
    os.umask(umask)  # the test daemon's: it inherits this process's
    h = sh.put(torch.randn(2))
    sh("torch save %s new.safetensors" % h, cwd=str(tmp_path))
    assert stat.S_IMODE(os.stat(tmp_path / "new.safetensors").st_mode) == 0o666 & ~umask
    os.chmod(tmp_path / "new.safetensors", 0o640)
    sh("torch save %s new.safetensors" % h, cwd=str(tmp_path))  # saved again: replaced, its mode kept
    assert stat.S_IMODE(os.stat(tmp_path / "new.safetensors").st_mode) == 0o640


def test_a_loaded_tensor_outlives_its_file_being_written_over_in_place(sh, tmp_path):
    from safetensors.torch import save_file
    big = torch.randn(1 << 18)
    save_file({"w": big}, tmp_path / "w.safetensors")
    save_file({"w": torch.ones(2)}, tmp_path / "small.safetensors")
    h = sh("torch load w.safetensors", cwd=str(tmp_path))
    sh("cp small.safetensors w.safetensors", cwd=str(tmp_path))  # the same inode, cut and rewritten
    assert torch.equal(sh.fetch(h), big)  # a value mapping the file: SIGBUS, and the daemon gone


@pytest.mark.parametrize("ext", ["npz", "safetensors", "pt"])
def test_several_tensors_keep_their_names(sh, tmp_path, ext):
    a, b = torch.randn(2), torch.arange(3)
    ha, hb = sh.put(a), sh.put(b)
    path = tmp_path / ("two." + ext)
    sh("torch save %s %s %s --names w,b" % (ha, hb, path))
    import json
    named = json.loads(sh("torch load %s --json" % path))
    assert set(named) == {"w", "b"}
    assert torch.equal(sh.fetch(named["w"]), a) and torch.equal(sh.fetch(named["b"]), b)


def test_files_written_by_numpy_and_torch_load(sh, tmp_path):
    np.save(tmp_path / "n.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
    assert sh("torch load %s | torch value" % (tmp_path / "n.npy")) == "[[0,1,2],[3,4,5]]"
    torch.save({"x": torch.ones(2)}, tmp_path / "d.pt")
    assert sh("torch load %s | torch value" % (tmp_path / "d.pt")) == "[1.0,1.0]"
    (tmp_path / "m.csv").write_text("1,2\n3,4\n")
    assert sh("torch load %s | torch value" % (tmp_path / "m.csv")) == "[[1.0,2.0],[3.0,4.0]]"


def test_pickled_objects_are_refused(sh, tmp_path):
    import pickle

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    with open(tmp_path / "evil.pt", "wb") as f:
        pickle.dump(Evil(), f)
    r = sh.run("torch load %s" % (tmp_path / "evil.pt"))
    assert r.code == 6 and "[file_error]" in r.err


def test_unknown_extension_is_a_usage_error(sh, tmp_path):
    r = sh.run("torch save $(torch ones '[1]') %s" % (tmp_path / "x.txt"))
    assert r.code == 2 and "unknown file type" in r.err
