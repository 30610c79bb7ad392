"""Module weights in files: nn save / nn load (PyTorch state_dict names, buffers, strict and atomic,
Python interop both ways) and nn jit_load of TorchScript saved from Python."""
import json

import torch
from safetensors.torch import load_file, save_file

nn = torch.nn

SPEC = "'conv2d 1 2 3' 'batch_norm2d 2' relu flatten 'linear 8 3'"


def python_twin():
    return nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3))


def test_saved_file_loads_into_python_with_load_state_dict(sh):
    path = sh.tmp("m.safetensors")
    x = torch.randn(4, 1, 4, 4)
    m = sh("torch nn sequential %s" % SPEC)
    sh("torch forward %s %s >/dev/null; torch nn save %s %s" % (m, sh.put(x), m, path))  # updates running stats
    state = load_file(path)
    assert set(state) == set(python_twin().state_dict())  # PyTorch's names, buffers included
    assert "1.running_mean" in state and state["1.num_batches_tracked"].item() == 1
    ref = python_twin()
    ref.load_state_dict(state)
    ref.eval()
    sh("torch nn eval %s" % m)
    assert torch.equal(sh.fetch(sh("torch forward %s %s" % (m, sh.put(x)))), ref(x).detach())


def test_python_state_dict_loads_here(sh):
    ref = python_twin()
    ref[1].running_var.fill_(2.0)
    path = sh.tmp("py.safetensors")
    save_file(ref.state_dict(), path)
    m = sh("torch nn sequential %s" % SPEC)
    sh("torch nn load %s %s" % (m, path))
    got = load_file(_resave(sh, m))
    assert all(torch.equal(got[k], v) for k, v in ref.state_dict().items())


def test_load_reads_pt_files_with_weights_only(sh):
    ref = nn.Linear(3, 2)
    path = sh.tmp("py.pt")
    torch.save(ref.state_dict(), path)
    m = sh("torch nn linear 3 2")
    sh("torch nn load %s %s" % (m, path))
    assert torch.equal(load_file(_resave(sh, m))["weight"], ref.weight.detach())


def _resave(sh, m):
    path = sh.tmp("again.safetensors")
    sh("torch nn save %s %s" % (m, path))
    return path


def test_load_names_a_missing_key_and_changes_nothing(sh):
    m = sh("torch nn sequential %s" % SPEC)
    before = load_file(_resave(sh, m))
    partial = dict(before)
    partial = {k: torch.zeros_like(v) for k, v in partial.items() if k != "4.bias"}
    path = sh.tmp("partial.safetensors")
    save_file(partial, path)
    r = sh.run("torch nn load %s %s" % (m, path))
    assert r.code == 4 and "1 missing [4.bias]" in r.err and "[state_mismatch]" in r.err
    after = load_file(_resave(sh, m))
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_load_names_an_unexpected_or_misshaped_key(sh):
    m = sh("torch nn linear 3 2")
    path = sh.tmp("extra.safetensors")
    save_file({"weight": torch.zeros(2, 3), "bias": torch.zeros(2), "scale": torch.ones(1)}, path)
    r = sh.run("torch nn load %s %s" % (m, path))
    assert r.code == 4 and "1 unexpected [scale]" in r.err
    save_file({"weight": torch.zeros(3, 3), "bias": torch.zeros(2)}, path)
    r = sh.run("torch nn load %s %s" % (m, path))
    assert r.code == 4 and "weight: file [3, 3] vs model [2, 3]" in r.err
    assert not torch.equal(load_file(_resave(sh, m))["weight"], torch.zeros(2, 3))


def test_save_needs_a_safetensors_or_pt_name_and_load_a_real_file(sh):
    m = sh("torch nn linear 3 2")
    r = sh.run("torch nn save %s %s" % (m, sh.tmp("w.bin")))
    assert r.code == 2 and ".safetensors" in r.err and ".pt" in r.err
    r = sh.run("torch nn load %s %s" % (m, sh.tmp("absent.safetensors")))
    assert r.code == 6


def test_pt_save_is_torch_save_of_the_state_dict_bit_for_bit(sh):
    """torch.load(weights_only=True) of what `nn save M m.pt` wrote is the model's state_dict, exactly:
    the same keys in the same order, dtypes (num_batches_tracked int64) and bits; load_state_dict takes it."""
    x = torch.randn(4, 1, 4, 4)
    m = sh("torch manual_seed 11 && torch nn sequential %s" % SPEC)
    sh("torch forward %s %s >/dev/null" % (m, sh.put(x)))  # running stats move
    path = sh.tmp("m.pt")
    sh("torch nn save %s %s" % (m, path))
    torch.manual_seed(11)
    ref = python_twin()
    ref(x)
    state = torch.load(path, weights_only=True)
    assert list(state) == list(ref.state_dict())
    for key, want in ref.state_dict().items():
        assert state[key].dtype == want.dtype and torch.equal(state[key], want), key
    python_twin().load_state_dict(state)  # strict
    assert torch.equal(load_file(_resave(sh, m))["0.weight"], state["0.weight"])


def test_pt_save_replaces_a_file_atomically_and_leaves_no_temp_file(sh, tmp_path):
    (tmp_path / "w.pth").write_bytes(b"old")
    m = sh("torch nn linear 3 2")
    sh("cd %s && torch nn save %s w.pth" % (tmp_path, m))  # replaced, as `>` and torch.save would
    assert set(torch.load(str(tmp_path / "w.pth"), weights_only=True)) == {"weight", "bias"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.pth"]
    r = sh.run("torch nn save %s %s" % (m, tmp_path / "absent" / "w.pt"))
    assert r.code == 6 and r.err.rstrip().endswith("[file_error]")


def test_pt_saved_here_loads_here_and_python_pt_loads_here(sh):
    ref = python_twin()
    ref[1].running_var.fill_(3.0)
    path = sh.tmp("py.pt")
    torch.save(ref.state_dict(), path)
    m = sh("torch nn sequential %s" % SPEC)
    again = sh.tmp("again.pt")
    sh("torch nn load %s %s && torch nn save %s %s" % (m, path, m, again))
    got = torch.load(again, weights_only=True)
    assert all(torch.equal(got[k], v) for k, v in ref.state_dict().items())


def test_relative_paths_resolve_against_the_callers_folder(sh, tmp_path):
    m = sh("torch nn linear 3 2")
    sh("cd %s && torch nn save %s w.safetensors" % (tmp_path, m))
    assert set(load_file(str(tmp_path / "w.safetensors"))) == {"weight", "bias"}


def test_jit_load_runs_a_torchscript_model_saved_from_python(sh):
    ref = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    path = sh.tmp("model.pt")
    torch.jit.save(torch.jit.script(ref), path)
    x = torch.randn(5, 3)
    out = sh("m=$(torch nn jit_load %s); torch forward $m %s" % (path, sh.put(x)))
    assert torch.equal(sh.fetch(out), ref(x).detach())
    info = json.loads(sh("torch nn jit_load %s | torch nn info --json" % path))
    assert info["parameters"] == 3 * 4 + 4 + 4 * 2 + 2


def test_jit_load_of_a_non_torchscript_file_is_a_file_error(sh):
    path = sh.tmp("plain.pt")
    torch.save({"w": torch.ones(1)}, path)
    r = sh.run("torch nn jit_load %s" % path)
    assert r.code == 6 and "TorchScript" in r.err
