"""A `torch.export` archive (.pt2, written by torch.export.save) as a module: `torch model open model.pt2`.

torch.export.load unpickles some members, some with weights_only=False, so the archive is scanned first
and opened only when nothing it would unpickle needs a global beyond weights_only. What PyTorch 2.13's
loader (torch/export/pt2_archive/_package.py, torch/_export/serde/serialize.py) unpickles, by member:
- data/sample_inputs/NAME.pt, and a legacy data/weights/NAME.pt or data/constants/NAME.pt:
  torch.load(weights_only=True), falling back to weights_only=False when that fails;
- a data/weights/ or data/constants/ member its *_config.json marks use_pickle: torch.load(weights_only=False);
- a constant named custom_obj_* (TorchScript's unpickler) or opaque_obj_* (pickle.loads): refused outright;
- data/aotinductor/ holds compiled native code it would load as a shared library: refused;
- when the archive is not of this format, torch.export.load falls back to an older one whose members are
  unpickled the same way: an archive without archive_format "pt2" and archive_version "0" is refused.
Each member it would unpickle must be a torch.save zip whose pickle needs no global beyond weights_only
(torch.serialization.get_unsafe_globals_in_checkpoint: PyTorch's static scan of the opcodes, which runs
none). The archive is read through one open file, so the file scanned is the file loaded.

The module is the ExportedProgram's .module(): a graph that runs as it was exported (export the model after
model.eval() for inference). forward, predict and train_step run it; train mode (fit, nn train) is refused.
"""
import io
import json
import types
import zipfile

import torch

from torchsh import fileio
from torchsh.errors import TorchshError

_FORMAT, _VERSION = ("archive_format", b"pt2"), ("archive_version", b"0")  # torch._C._export.pt2_archive_constants
_NATIVE = ("data/aotinductor/",)
_REFUSED_CONSTANTS = ("custom_obj_", "opaque_obj_")
_RESAVE = "re-save it with torch.export.save(torch.export.export(model.eval(), example_inputs), 'model.pt2')"


def open_module(path):
    """The .module() of the ExportedProgram in the archive at path, after the scan; file_error for the rest."""
    fileio.regular_file(path)
    try:
        with open(path, "rb") as f:
            scan(f, path)
            f.seek(0)
            program = torch.export.load(f)
    except TorchshError:
        raise
    except Exception as e:  # PyTorch's deserializer of a scanned but damaged archive may raise anything
        raise TorchshError("file_error", "cannot open %s as a torch.export program: %s"
                           % (path, fileio.first_line(e)), _RESAVE) from None
    return fixed_mode(program.module(), path)


def scan(f, path):
    """Refuse the archive unless nothing torch.export.load would unpickle needs more than weights_only."""
    if not zipfile.is_zipfile(f):
        raise TorchshError("file_error", "%s is not a torch.export archive (not a zip file)" % path, _RESAVE)
    with zipfile.ZipFile(f) as archive:
        members = _members(archive, path)
        for what, want in (_FORMAT, _VERSION):
            if what not in members or archive.read(members[what]).strip() != want:
                raise TorchshError("file_error", "%s is not a torch.export archive of this PyTorch's format "
                                   "(its %s is not %s); older ones load through pickle" % (path, what, want.decode()),
                                   _RESAVE + " with PyTorch " + torch.__version__)
        native = [name for name in members if name.startswith(_NATIVE)]
        if native:
            raise TorchshError("file_error", "%s holds AOTInductor native code (%s): torchsh opens exported "
                               "programs, never shared libraries" % (path, native[0]), _RESAVE)
        for name in _pickled(archive, members, path):
            _check_pickle(archive.read(members[name]), name, path)


def _members(archive, path):
    """{name inside the archive's one root folder: the zip's own name}, as torch's archive reader sees them."""
    names = archive.namelist()
    if len(set(names)) != len(names):  # two readers may take different ones: the scanned must be the loaded
        raise TorchshError("file_error", "%s names a member twice: not an archive torch.export.save wrote" % path,
                           _RESAVE)
    if len({name.split("/", 1)[0] for name in names}) != 1 or any("/" not in name for name in names):
        raise TorchshError("file_error", "%s is not a torch.export archive (members outside one root folder)"
                           % path, _RESAVE)
    return {name.split("/", 1)[1]: name for name in names if not name.endswith("/")}


def _pickled(archive, members, path):
    """The members torch.export.load would unpickle (the module's docstring lists them, by model)."""
    out = []
    for model in [n[len("models/"):-len(".json")] for n in members if n.startswith("models/") and n.endswith(".json")]:
        out += [n for n in ("data/sample_inputs/%s.pt" % model, "data/weights/%s.pt" % model,
                            "data/constants/%s.pt" % model) if n in members]
        for folder, config in (("data/weights/", "data/weights/%s_weights_config.json" % model),
                               ("data/constants/", "data/constants/%s_constants_config.json" % model)):
            if config not in members:
                continue
            for key, entry in _config(archive.read(members[config]), config, path).items():
                name = str(entry.get("path_name"))
                if name.startswith(_REFUSED_CONSTANTS):
                    raise TorchshError("file_error", "%s holds constant %s as a Python object (%s), which only "
                                       "unpickling makes" % (path, key, name), "export a model whose constants "
                                       "are tensors")
                if entry.get("use_pickle"):
                    out.append(folder + name)
    missing = [name for name in out if name not in members]
    if missing:
        raise TorchshError("file_error", "%s names member %s, which it lacks" % (path, missing[0]), _RESAVE)
    return out


def _config(data, name, path):
    try:
        config = json.loads(data)["config"]
        if isinstance(config, dict) and all(isinstance(v, dict) for v in config.values()):
            return config
    except (ValueError, KeyError, TypeError):
        pass
    raise TorchshError("file_error", "%s: its %s is not a payload config" % (path, name), _RESAVE)


def _check_pickle(data, name, path):
    """A member PyTorch would torch.load: a torch.save zip (not TorchScript, not an old-style pickle) whose
    pickle needs no global beyond weights_only."""
    buffer = io.BytesIO(data)
    if not zipfile.is_zipfile(buffer):
        raise TorchshError("file_error", "%s: member %s is a pickle outside torch.save's zip format, which "
                           "cannot be scanned; nothing was unpickled" % (path, name), _RESAVE)
    with zipfile.ZipFile(buffer) as inner:
        inner_names = [n.split("/", 1)[-1] for n in inner.namelist()]
    if "data.pkl" not in inner_names or "constants.pkl" in inner_names:
        raise TorchshError("file_error", "%s: member %s is not a torch.save archive" % (path, name), _RESAVE)
    buffer.seek(0)
    needed = sorted(torch.serialization.get_unsafe_globals_in_checkpoint(buffer))
    if needed:
        raise TorchshError("file_error", "%s: member %s needs globals beyond weights_only: %s; nothing was "
                           "unpickled" % (path, name, " ".join(needed)),
                           "torch.export.load would unpickle them; open only archives you made, re-saved")


def fixed_mode(module, path):
    """ExportedProgram.module() raises NotImplementedError on train() and eval(): its graph runs as it was
    exported. Here eval() (predict, nn summary) leaves it as it is, and train mode is refused by name."""
    def train(self, mode=True):
        if mode:
            raise TorchshError("torch_error", "%s is a torch.export program: its graph runs as it was exported "
                               "and cannot be put in train mode (fit, nn train)" % path,
                               "train the model's own class: `torch model open FILE.py:CLASS --weights W`")
        return self

    module.train = types.MethodType(train, module)
    module.eval = types.MethodType(lambda self: self, module)
    for sub in module.modules():
        sub.training = False
    return module
