"""`torch model open`: the user's own class from their file (a residual net, against the same class built in
Python), torch.export archives (and the planted ones PyTorch's loader would unpickle, refused before anything
runs), torchvision and timm through their registries, and --weights through `nn load`'s path."""
import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import save_file

from support.usernets import NET, python_net, write_net


def test_a_residual_class_from_the_users_file_trains_a_step_as_in_python(sh):
    folder = sh.tmp("net")
    path = write_net(folder)
    x, y = torch.randn(5, 3), torch.randn(5, 2)
    out = sh("cd %s && torch manual_seed 0 && m=$(torch model open mynet.py:Net --args '{\"hidden\": 16}') && "
             "o=$(torch optim sgd $m --lr 0.1) && torch train_step $m $o --loss mse_loss %s %s >/dev/null && "
             "torch forward $m %s" % (folder, sh.put(x), sh.put(y), sh.put(x)))
    torch.manual_seed(0)
    ref = python_net(path, hidden=16)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    torch.nn.functional.mse_loss(ref(x), y).backward()
    opt.step()
    assert torch.equal(sh.fetch(out), ref(x).detach())


def test_weights_load_strictly_as_nn_load_reads_them(sh):
    folder = sh.tmp("weights")
    path = write_net(folder)
    ref, x = python_net(path, hidden=4), torch.randn(2, 3)
    torch.save(ref.state_dict(), os.path.join(folder, "w.pt"))
    save_file(ref.state_dict(), os.path.join(folder, "w.safetensors"))
    for weights in ("w.pt", "w.safetensors"):
        out = sh("cd %s && torch forward $(torch model open mynet.py:Net --args '{\"hidden\": 4}' --weights %s) %s"
                 % (folder, weights, sh.put(x)))
        assert torch.equal(sh.fetch(out), ref(x).detach())
    r = sh.run("cd %s && torch model open mynet.py:Net --args '{\"hidden\": 5}' --weights w.pt" % folder)
    assert r.code == 4 and "[state_mismatch]" in r.err and "stem.weight: file [4, 3] vs model [5, 3]" in r.err


def test_two_files_of_one_name_are_two_modules(sh):
    first, second = sh.tmp("a"), sh.tmp("b")
    write_net(first)
    write_net(second, NET.replace("classes=2", "classes=7"))
    got = [json.loads(sh("torch nn info $(torch model open %s/mynet.py:Net) --json" % folder))["tensors"]
           for folder in (first, second)]
    heads = [next(t["shape"] for t in tensors if t["name"] == "head.weight") for tensors in got]
    assert heads == [[2, 16], [7, 16]]


@pytest.mark.parametrize("source,args,words", [
    ("missing.py:Net", None, ["no such Python file"]),
    ("mynet.py:Nett", None, ["has no class Nett", "its nn.Module classes: Block, Net"]),
    ("mynet.py:Plain", None, ["Plain, which is not a torch.nn.Module class"]),
    ("mynet.py:Net", '{"hiden": 3}', ["Net(hiden=3) raised TypeError", "unexpected keyword argument 'hiden'"]),
    ("mynet.py:Net", "[1, 2]", ["--args is a JSON object"]),
    ("broken.py:Net", None, ["running", "broken.py failed: ZeroDivisionError: division by zero (line 2)"]),
    ("exiting.py:Net", None, ["Net() raised SystemExit: 3"]),
    ("resnet18", None, ["name a model as torchvision:NAME, timm:NAME, FILE.pt2 or FILE.py:CLASS"]),
])
def test_what_cannot_be_opened_is_one_line_with_the_reason(sh, source, args, words):
    folder = sh.tmp("bad")
    write_net(folder)
    write_net(folder, "import torch\nx = 1 / 0\n", "broken.py")
    write_net(folder, NET.replace("super().__init__()", "raise SystemExit(3)", 1), "exiting.py")
    r = sh.run("cd %s && torch model open %s %s" % (folder, source, "--args '%s'" % args if args else ""))
    assert r.code == 2 and r.err.count("\n") == 1 and "[bad_argument]" in r.err, r.err
    assert "Traceback" not in r.err and all(w in r.err for w in words), r.err


def test_an_error_the_users_forward_raises_is_theirs_in_one_line(sh):
    folder = sh.tmp("asserting")
    write_net(folder, NET.replace("h = torch.relu(self.stem(x))",
                                  "assert x.shape[1] == 3, 'Net takes 3 features'\n        h = torch.relu(self.stem(x))"))
    r = sh.run("cd %s && torch forward $(torch model open mynet.py:Net) $(torch randn 2 4)" % folder)
    assert r.code == 4 and r.err.count("\n") == 1 and "Net takes 3 features" in r.err, r.err


@pytest.mark.parametrize("call", ["sys.exit(3)", "raise SystemExit('bye')", "raise KeyboardInterrupt"])
def test_a_forward_that_exits_is_one_line_and_the_daemon_keeps_answering(sh, call):
    folder = sh.tmp("exiting")
    write_net(folder, "import sys\n" + NET.replace("h = torch.relu(self.stem(x))",
                                                     "%s\n        h = torch.relu(self.stem(x))" % call))
    r = sh.run("cd %s && torch forward $(torch model open mynet.py:Net) $(torch randn 2 3)" % folder)
    assert r.code == 4 and r.err.count("\n") == 1 and "[torch_error]" in r.err, r.err
    assert sh("torch ones 2 | torch sum | torch value") == "2.0"  # the tensor thread lives on


def export_residual(path, batch=4):
    """A residual net in eval mode, exported with a dynamic batch and saved; (the model, its program)."""
    model = python_net(write_net(os.path.dirname(path) or ".", name="exported_net.py"), hidden=6).eval()
    program = torch.export.export(model, (torch.randn(batch, 3),), dynamic_shapes=({0: torch.export.Dim("b")},))
    torch.export.save(program, path)
    return model, program


def test_a_pt2_program_forwards_and_predicts_as_the_exported_model(sh):
    path = sh.tmp("m.pt2")
    model, program = export_residual(path)
    x = torch.randn(9, 3)
    m = sh("torch model open %s" % path)
    assert torch.equal(sh.fetch(sh("torch forward %s %s" % (m, sh.put(x)))), program.module()(x))
    assert torch.allclose(sh.fetch(sh("torch predict %s %s" % (m, sh.put(x)))), model(x).detach())
    assert json.loads(sh("torch nn info %s --json" % m))["parameters"] == sum(p.numel() for p in model.parameters())
    r = sh.run("torch fit %s $(torch optim sgd %s --lr 0.1) $(torch data loader $(torch data tensors %s %s)) "
               "--loss mse_loss" % (m, m, sh.put(x), sh.put(torch.randn(9, 2))))
    assert r.code == 4 and "is a torch.export program" in r.err and "cannot be put in train mode" in r.err, r.err


def _replace_members(path, replace, add=None):
    """Rewrite the zip at path with some members' bytes replaced ({suffix: bytes}) and others added."""
    import zipfile
    with zipfile.ZipFile(path) as z:
        members = [(name, z.read(name)) for name in z.namelist()]
    root = members[0][0].split("/", 1)[0]
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members:
            z.writestr(name, next((new for suffix, new in replace.items() if name.endswith(suffix)), data))
        for name, data in (add or {}).items():
            z.writestr(root + "/" + name, data)


def _pickled(obj):
    import io
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _plant(path, marker, how):
    from support.planted import MaliciousPickle
    export_residual(path)
    evil = _pickled({"x": MaliciousPickle(marker)})
    if how == "sample_inputs":
        _replace_members(path, {"data/sample_inputs/model.pt": evil})
    elif how == "pickled_weight":  # the config says use_pickle: torch.load(weights_only=False)
        import zipfile
        with zipfile.ZipFile(path) as z:
            config_name = next(n for n in z.namelist() if n.endswith("model_weights_config.json"))
            config = json.loads(z.read(config_name))
        entry = config["config"]["stem.weight"]
        entry["use_pickle"] = True
        _replace_members(path, {config_name: json.dumps(config).encode(), "/" + entry["path_name"]: evil})


@pytest.mark.parametrize("how", ["sample_inputs", "pickled_weight"])
def test_a_pt2_member_pytorch_would_unpickle_is_refused_by_its_globals_and_never_runs(sh, how):
    marker, path = sh.tmp("ran"), sh.tmp("evil.pt2")
    _plant(path, marker, how)
    r = sh.run("torch model open %s" % path)
    assert r.code == 6 and "[file_error]" in r.err and "needs globals beyond weights_only" in r.err, r.err
    assert "posix.system" in r.err or "os.system" in r.err, r.err
    assert not os.path.exists(marker)
    # the oracle: PyTorch's own torch.export.load of the same planted archive runs the payload
    witness, copy = sh.tmp("ran-in-python"), sh.tmp("evil-copy.pt2")
    _plant(copy, witness, how)
    subprocess.run([sys.executable, "-c", "import sys, torch; torch.export.load(sys.argv[1])", copy],
                   capture_output=True, timeout=300)
    assert os.path.exists(witness)


@pytest.mark.parametrize("how,words", [
    ("aoti", "AOTInductor native code"),
    ("opaque", "as a Python object (opaque_obj_0)"),
    ("legacy", "its archive_version is not 0"),
    ("not_zip", "not a torch.export archive (not a zip file)"),
    ("twice", "names a member twice"),
])
@pytest.mark.filterwarnings("ignore:Duplicate name")  # the "twice" archive, written so on purpose
def test_a_pt2_holding_what_only_unpickling_or_native_code_makes_is_refused(sh, how, words):
    path = sh.tmp("odd.pt2")
    export_residual(path)
    if how == "aoti":
        _replace_members(path, {}, {"data/aotinductor/model/model.so": b"\x7fELF"})
    elif how == "opaque":
        config = {"config": {"c": {"path_name": "opaque_obj_0", "is_param": False, "use_pickle": True}}}
        _replace_members(path, {"model_constants_config.json": json.dumps(config).encode()},
                         {"data/constants/opaque_obj_0": b"\x80\x04N."})
    elif how == "twice":  # a benign sample_inputs first, another after it: zip readers differ on which is read
        _replace_members(path, {}, {"data/sample_inputs/model.pt": _pickled(((torch.ones(1),), {}))})
    elif how == "legacy":
        _replace_members(path, {"/archive_version": b"7"})
    else:
        with open(path, "wb") as f:
            f.write(b"\x80\x04N.")
    r = sh.run("torch model open %s" % path)
    assert r.code == 6 and "[file_error]" in r.err and words in r.err, r.err


def _imports(library):
    """None when the library imports in Python here, else the exception's one line."""
    p = subprocess.run([sys.executable, "-c", "import " + library], capture_output=True, text=True, timeout=300)
    return None if p.returncode == 0 else (p.stderr.strip().splitlines() or ["?"])[-1]


@pytest.mark.parametrize("library", ["torchvision", "timm"])
def test_a_vision_library_that_does_not_import_is_named_with_its_fix(sh, library):
    failure = _imports(library)
    if failure is None:
        pytest.skip("%s imports here: test_registry_models_are_the_libraries_own covers it" % library)
    r = sh.run("torch model open %s:resnet18 --num_classes 10" % library)
    assert r.code == 2 and "[missing_extra]" in r.err and r.err.count("\n") == 1, r.err
    if "No module named" in failure:
        assert "pip install 'torchsh[vision]' torch==%s" % torch.__version__.split("+")[0] in r.err
    else:  # this image's torchvision is a CUDA build: its C extension needs libc10_cuda.so
        assert "torchvision's C extension does not load" in r.err and failure.split(":")[-1].strip() in r.err
        assert "pip install torchvision==0.%d" % (int(torch.__version__.split(".")[1]) + 15) in r.err
        assert "--index-url https://download.pytorch.org/whl/" in r.err


@pytest.mark.parametrize("library,build", [
    ("torchvision", "import torchvision; m = torchvision.models.get_model('resnet18', weights=None, num_classes=10)"),
    ("timm", "import timm; m = timm.create_model('resnet18', pretrained=False, num_classes=10)"),
])
def test_registry_models_are_the_libraries_own(sh, library, build):
    failure = _imports(library)
    if failure is not None:  # this machine image's torchvision is a CUDA build beside a CPU torch
        pytest.skip("%s does not import here (%s): the missing_extra test covers this machine" % (library, failure))
    x = torch.randn(1, 3, 32, 32)
    out = sh("torch manual_seed 0; torch predict $(torch model open %s:resnet18 --num_classes 10) %s"
             % (library, sh.put(x)))
    namespace = {}
    torch.manual_seed(0)
    exec(build, namespace)
    assert torch.equal(sh.fetch(out), namespace["m"].eval()(x).detach())
    r = sh.run("torch model open %s:resnet81" % library)
    assert r.code == 2 and "did you mean resnet18" in r.err, r.err
