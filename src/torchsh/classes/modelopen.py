"""`torch model open SOURCE`: a model from what people already have, as a module the registry holds.

- `torchvision:NAME` through torchvision's own registry (torchvision.models.get_model(NAME, weights=None,
  **args)), `timm:NAME` through timm.create_model(NAME, pretrained=False, **args): architectures only, no
  download; weights come from --weights. Both are the `vision` extra; a torchvision that does not import
  with this PyTorch (a build for another torch or CUDA: its C extension does not load) is named with its fix.
- `FILE.pt2`: a torch.export archive, scanned before it loads (formats/pt2file.py).
- `FILE.py:CLASS`: the user's own class. This RUNS the file's code in the daemon, as
  `python -c 'from FILE import CLASS'` would: its module is imported under a private name of its own (so two
  files named alike never meet), with the file's folder on sys.path while it imports (as python puts a
  script's folder there), then CLASS(**args) is built.
--weights FILE loads a state dict through `torch nn load`'s path (classes/stateload.py: weights_only pickles,
safetensors, sharded folders), strict.
"""
import importlib
import importlib.util
import inspect
import itertools
import os
import sys

import torch

from torchsh.call.suggest import close
from torchsh.classes import stateload
from torchsh.errors import USER_MODULE_PREFIX, TorchshError, bad_argument
from torchsh.formats import pt2file

FORMS = "torchvision:NAME, timm:NAME, FILE.pt2 or FILE.py:CLASS"
_USER_MODULES = itertools.count()  # a private module name per file opened: mynet.py twice is two modules


def open_model(ctx, source, args=None, num_classes=None, weights=None):
    """The module SOURCE names (FORMS), built with args (a dict) and num_classes, and --weights loaded."""
    if args is not None and not isinstance(args, dict):
        raise bad_argument("--args is a JSON object of constructor arguments, e.g. '{\"hidden\": 16}'")
    args = dict(args or {}, **({} if num_classes is None else {"num_classes": num_classes}))
    kind, _, name = source.partition(":")
    if kind in ("torchvision", "timm") and name:
        model = registry_model(kind, name, args)
    elif source.endswith(".pt2"):
        if args:
            raise bad_argument("a torch.export program takes no constructor arguments (--args, --num_classes)")
        model = pt2file.open_module(ctx.path(source))
    elif ".py:" in source:
        file, _, cls_name = source.rpartition(":")
        model = user_model(ctx.path(file), cls_name, args)
    else:
        raise bad_argument("cannot open %r: name a model as %s" % (source, FORMS),
                           "e.g. torch model open torchvision:resnet18 --num_classes 10")
    if weights is not None:
        stateload.load_file(model, weights)
    return model


def registry_model(library, name, args):
    """torchvision's or timm's model NAME with random weights."""
    lib = import_vision(library)
    if library == "torchvision":
        names, lister = lib.models.list_models(), "torchvision.models.list_models()"
        known, build = name in names, lambda: lib.models.get_model(name, weights=None, **args)
    else:
        names, lister = lib.list_models(), "timm.list_models()"  # architectures; is_model takes tagged names too
        known, build = lib.is_model(name), lambda: lib.create_model(name, pretrained=False, **args)
    if not known:
        near = close(name, names)
        raise bad_argument("%s has no model %r" % (library, name), "did you mean %s?" % " or ".join(near) if near
                           else "python -c 'import %s; print(%s)' lists them" % (library, lister))
    return _construct("%s:%s" % (library, name), build, args)


def import_vision(library):
    """torchvision or timm, or missing_extra naming why it does not import and what to install."""
    pin = "torch==" + torch.__version__.split("+")[0]
    try:
        return importlib.import_module(library)
    except ModuleNotFoundError as e:
        if e.name not in (library, "torchvision"):
            raise _broken(library, e) from None
        raise TorchshError("missing_extra", "%s:NAME needs %s, which is not installed" % (library, e.name),
                           "pip install 'torchsh[vision]' %s" % pin) from None
    except Exception as e:  # an import runs the package's code: a build for another torch raises anything
        raise _broken(library, e) from None


def _broken(library, exc):
    """A torchvision built for another torch or CUDA: installed, but its C extension does not load here."""
    major, minor, patch = (torch.__version__.split("+")[0].split(".") + ["0", "0"])[:3]
    index = "cpu" if torch.version.cuda is None else "cu" + torch.version.cuda.replace(".", "")
    return TorchshError(
        "missing_extra", "%s does not import with PyTorch %s (%s: %s): torchvision's C extension does not load, "
        "so it is a torchvision built for another torch or CUDA" % (library, torch.__version__, type(exc).__name__,
                                                                    str(exc).split("\n")[0][:200]),
        "install the torchvision built for your torch, e.g. pip install torchvision==0.%d.%s --index-url "
        "https://download.pytorch.org/whl/%s" % (int(minor) + 15, patch, index))


def user_model(path, cls_name, args):
    """CLASS(**args) from the Python file at path, whose code runs here (the module's docstring)."""
    if not os.path.isfile(path):
        raise bad_argument("no such Python file: %s" % path)
    module = _import_file(path)
    cls = getattr(module, cls_name, None)
    if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
        found = [n for n, v in vars(module).items() if inspect.isclass(v) and issubclass(v, torch.nn.Module)
                 and v.__module__ == module.__name__]
        what = "no class %s" % cls_name if cls is None else "%s, which is not a torch.nn.Module class" % cls_name
        raise bad_argument("%s has %s" % (path, what), "its nn.Module classes: %s" % (", ".join(found) or "none"))
    return _construct(cls_name, lambda: cls(**args), args)


def _import_file(path):
    stem = "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[:-3])
    name = "%s%d_%s" % (USER_MODULE_PREFIX, next(_USER_MODULES), stem)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # what dataclasses and typing look their classes' module up in
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # the user's code may raise anything; it is their error, by line
        sys.modules.pop(name, None)
        raise bad_argument("running %s failed: %s" % (path, _where(e, path)),
                           "model open FILE.py:CLASS runs FILE as python would import it") from None
    finally:
        if folder in sys.path:  # the file's code may have edited sys.path itself
            sys.path.remove(folder)
    return module


def _construct(what, build, args):
    try:
        return build()
    except (Exception, SystemExit) as e:  # the user's or the library's code (sys.exit would end the tensor thread)
        shown = ", ".join("%s=%r" % kv for kv in args.items())
        raise bad_argument("%s(%s) raised %s: %s" % (what, shown, type(e).__name__, str(e).split("\n")[0][:300]),
                           "--args '{\"NAME\": VALUE}' are the constructor's keyword arguments") from None


def _where(exc, path):
    """TypeName: message (line N of the user's file, where the traceback last passed through it)."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return "%s: %s%s" % (type(exc).__name__, str(exc).split("\n")[0][:300], " (line %d)" % line if line else "")
