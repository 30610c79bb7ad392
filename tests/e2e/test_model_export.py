"""`torch model export M FILE.onnx|FILE.pt2 --example SHAPE|TENSOR [--dynamic DIM]`: the written model run
by onnxruntime (an .onnx) or loaded by torch.export.load (a .pt2) in this process gives what the same
weights give in PyTorch; the model's mode is kept; refusals are one line with a code and write nothing."""
import json
import os
import sys

import onnxruntime
import pytest
import torch
from safetensors.torch import load_file

from torchsh.errors import TorchshError
from torchsh.models import export

nn = torch.nn
MLP = ("'linear 4 8' relu 'linear 8 2'", lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), [1, 4])
CNN = ("'conv2d 3 8 3' 'batch_norm2d 8' relu 'conv2d 8 8 3 --stride 2' relu 'adaptive_avg_pool2d 1' flatten 'linear 8 10'",
       lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)), [1, 3, 32, 32])


def twin(sh, m, make):
    """The model as torchsh holds it, rebuilt in this process from its saved weights, in eval mode."""
    path = sh.tmp("twin.safetensors")
    sh("torch nn save %s %s" % (m, path))
    model = make()
    model.load_state_dict(load_file(path))
    return model.eval()


def run_onnx(path, x):
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return torch.from_numpy(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0])


@pytest.mark.parametrize("spec,make,shape", [MLP, CNN], ids=["mlp", "cnn"])
def test_onnx_run_by_onnxruntime_equals_the_model_in_pytorch(sh, spec, make, shape):
    m, path = sh("torch nn sequential %s" % spec), sh.tmp("model.onnx")
    sh("torch nn train %s" % m)
    out = sh("torch model export %s %s --example %s" % (m, path, ",".join(map(str, shape))))
    assert out.startswith("%s  onnx  " % path) and "max |Δ| = " in out and out.endswith("(onnxruntime)")
    model, x = twin(sh, m, make), torch.randn(shape)
    with torch.no_grad():
        assert (run_onnx(path, x) - model(x)).abs().max().item() <= 1e-5
    assert json.loads(sh("torch nn info %s --json" % m))["mode"] == "train"  # exported in eval, mode restored
    assert [f for f in os.listdir(sh.folder) if f.startswith(".torchsh-")] == []


def test_dynamic_batch_dim_takes_other_batch_sizes_in_onnxruntime_and_the_pt2(sh):
    m, onnx, pt2 = sh("torch nn sequential %s" % MLP[0]), sh.tmp("dyn.onnx"), sh.tmp("dyn.pt2")
    sh("torch model export %s %s --example 1,4 --dynamic 0" % (m, onnx))
    got = json.loads(sh("torch model export %s %s --example 1,4 --dynamic 0 --json" % (m, pt2)))
    assert got["example"] == [1, 4] and got["dynamic"] == [0] and got["max_abs_diff"] == 0.0
    model, x = twin(sh, m, MLP[1]), torch.randn(5, 4)
    with torch.no_grad():
        assert (run_onnx(onnx, x) - model(x)).abs().max().item() <= 1e-5
        assert torch.equal(torch.export.load(pt2).module()(x), model(x))
    fixed = sh.tmp("fixed.onnx")
    sh("torch model export %s %s --example 1,4" % (m, fixed))
    with pytest.raises(Exception, match="(?i)dimension|shape|invalid"):  # without --dynamic the batch is 1
        run_onnx(fixed, x)


@pytest.mark.parametrize("spec,make,shape", [MLP, CNN], ids=["mlp", "cnn"])
def test_pt2_loads_with_torch_export_load_and_equals_the_model_bit_for_bit(sh, spec, make, shape):
    m, path = sh("torch nn sequential %s" % spec), sh.tmp("model.pt2")
    x = torch.randn(shape)
    out = sh("torch model export %s %s --example %s" % (m, path, sh.put(x)))
    assert out.endswith("max |Δ| = 0 (torch.export)")
    program, model = torch.export.load(path), twin(sh, m, make)
    with torch.no_grad():
        assert torch.equal(program.module()(x), model(x))
    assert set(program.state_dict) <= set(model.state_dict())


def test_refusals_are_one_line_with_a_code_and_write_nothing(sh):
    m = sh("torch nn sequential %s" % MLP[0])
    cases = [("out.txt --example 1,4", 2, "writes .onnx or .pt2 files, not", "[bad_argument]"),
             ("out.onnx --example abc", 2, "--example wants int[] or Tensor", "[bad_argument]"),
             ("out.onnx --example 0,4", 2, "a shape of positive sizes", "[bad_argument]"),
             ("out.pt2 --example 1,5", 4, "cannot be multiplied", "[shape_mismatch]"),
             ("out.pt2 --example 1,4 --dynamic 2", 2, "--dynamic 2: the example has 2 dims", "[bad_argument]"),
             ("out.pt2 --example 1,4 --dynamic 1", 4, "torch.export cannot export this model", "[torch_error]"),
             ("out.pt2 --example 1,4 --tolerance -1", 2, "--tolerance -1: not below 0", "[bad_argument]"),
             ("out.pt2", 2, "missing example", "[missing_argument]"),
             ("out.onnx --example 1000000,1000000", 4, "would exceed the memory budget", "[out_of_memory]")]
    for args, code, message, tag in cases:
        r = sh.run("torch model export %s %s" % (m, args))
        assert (r.code, r.out, r.err.count("\n")) == (code, "", 1), (args, r)
        assert message in r.err and r.err.rstrip().endswith(tag), (args, r.err)
    script = sh.tmp("lin.ts")
    torch.jit.script(nn.Linear(4, 2)).save(script)
    r = sh.run("torch model export $(torch nn jit_load %s 2>/dev/null) out.onnx --example 1,4" % script)
    assert r.code == 4 and "ScriptModule is not supported" in r.err and r.err.rstrip().endswith("[torch_error]")
    # nothing of what the refused exports would have written (another test's `out` folder is not theirs)
    assert sorted(f for f in os.listdir(sh.folder) if f in ("out.txt", "out.onnx", "out.pt2")
                  or f.startswith(".torchsh-")) == []


class Branchy(nn.Module):
    """forward() branches on a value: torch.export cannot trace it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x):
        return self.lin(x) if x.sum() > 0 else -self.lin(x)


@pytest.mark.parametrize("name", ["b.pt2", "b.onnx"])
def test_data_dependent_control_flow_is_a_torch_error_and_writes_nothing(tmp_path, name):
    with pytest.raises(TorchshError) as err:
        export.export(Branchy(), str(tmp_path / name), [1, 4])
    assert err.value.code == "torch_error" and "data-dependent" in err.value.message + err.value.hint
    assert os.listdir(tmp_path) == []


def test_an_onnx_file_over_the_tolerance_is_refused_and_not_written(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "max_abs_diff", lambda got, want: 3e-4)
    with pytest.raises(TorchshError) as err:
        export.export(nn.Linear(4, 2), str(tmp_path / "m.onnx"), [1, 4])
    assert err.value.code == "torch_error" and "max |Δ| = 0.0003 > 1e-05; nothing was written" in err.value.message
    assert "--tolerance 0.0006 accepts it" in err.value.hint and os.listdir(tmp_path) == []


def test_a_missing_onnxscript_is_missing_extra_naming_the_pip_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # import onnxscript raises ImportError
    with pytest.raises(TorchshError) as err:
        export.export(nn.Linear(4, 2), str(tmp_path / "m.onnx"), [1, 4])
    assert err.value.code == "missing_extra" and err.value.hint == "pip install 'torchsh[export]'"


def test_without_onnxruntime_the_onnx_is_written_unchecked_and_stderr_says_so(fresh_sh):
    bare = fresh_sh(start=False)
    blocked = os.path.join(bare.folder, "blocked", "onnxruntime")
    os.makedirs(blocked)
    with open(os.path.join(blocked, "__init__.py"), "w") as f:
        f.write("raise ImportError('onnxruntime is not installed (blocked for a test)')\n")
    bare.env["PYTHONPATH"] = os.path.dirname(blocked)
    bare("torch daemon start")
    path = bare.tmp("m.onnx")
    r = bare.run("torch model export $(torch nn linear 4 2) %s --example 1,4" % path)
    assert r.code == 0 and r.out.startswith("%s  onnx  " % path) and "Δ" not in r.out
    assert r.err == "torch: model export: warning: %s not checked: onnxruntime is not installed " \
                    "(pip install 'torchsh[export]')\n" % os.path.basename(path)
    assert run_onnx(path, torch.ones(1, 4)).shape == (1, 2)
