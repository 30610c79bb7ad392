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
--weights FILE loads a state dict through `torch nn load`'s path (formats/stateload.py: weights_only pickles,
safetensors, sharded folders), strict.
Each model keeps how it was opened (its recipe: the file's real path and class, or the library's name, and
the arguments), so `session save` and `cp` take it along; a rebuild runs the file again (reopen).
"""
import importlib
import importlib.util
import inspect
import itertools
import os
import sys

import torch

from torchsh import memory
from torchsh.errors import USER_MODULE_PREFIX, TorchshError, bad_argument
from torchsh.formats import pt2file, stateload
from torchsh.recipes.base import not_portable, record
from torchsh.text.suggest import close
from torchsh.trust import S_IFREG, untrusted

FORMS = "torchvision:NAME, timm:NAME, FILE.pt2 or FILE.py:CLASS"
RECIPE_CLASS = "model.open"  # the class a recipe names for a model opened here (recipes.base.record)
_USER_MODULES = itertools.count()  # a private module name per file opened: mynet.py twice is two modules


def open_model(ctx, source, args=None, num_classes=None, weights=None):
    """The module SOURCE names (FORMS), built with args (a dict) and num_classes, and --weights loaded."""
    if args is not None and not isinstance(args, dict):
        raise bad_argument("--args is a JSON object of constructor arguments, e.g. '{\"hidden\": 16}'")
    args = dict(args or {}, **({} if num_classes is None else {"num_classes": num_classes}))
    kind, _, name = source.partition(":")
    if kind in ("torchvision", "timm") and name:
        model = registry_model(kind, name, args, ctx)
    elif source.endswith(".pt2"):
        if args:
            raise bad_argument("a torch.export program takes no constructor arguments (--args, --num_classes)")
        source = os.path.realpath(ctx.path(source))
        model = pt2file.open_module(source)
    elif ".py:" in source:
        file, _, cls_name = source.rpartition(":")
        source = "%s:%s" % (os.path.realpath(ctx.path(file)), cls_name)
        model = user_model(ctx.path(file), cls_name, args, ctx)
    else:
        raise bad_argument("cannot open %r: name a model as %s" % (source, FORMS),
                           "e.g. torch model open torchvision:resnet18 --num_classes 10")
    if weights is not None:
        stateload.load_file(model, weights)
    return record(model, RECIPE_CLASS, {"source": source, "args": args})  # its recipe: sessions rebuild it


def reopen(source, args):
    """The model open_model built from SOURCE (a file's real path, or a library's name) and args, again, for a
    session or bundle that holds its recipe (recipes/modules.py); its values come from the saved state. The
    file's code runs here: a file another user could have planted or changed is refused (trust.py)."""
    kind, _, name = source.partition(":")
    if kind in ("torchvision", "timm") and name:
        return registry_model(kind, name, args)
    file = source if source.endswith(".pt2") else source.rpartition(":")[0]
    try:
        why = untrusted(file, S_IFREG)
    except OSError as e:
        why = "%s: %s" % (file, e.strerror)
    if why is not None:
        raise not_portable("cannot rebuild the model opened from %s: %s" % (source, why),
                           "open it again with `torch model open` and load its weights (`torch nn load`)")
    if source.endswith(".pt2"):
        return pt2file.open_module(file)
    return user_model(file, source.rpartition(":")[2], args)


def registry_model(library, name, args, ctx=None):
    """torchvision's or timm's model NAME with random weights (ctx: whose memory budget admits it first)."""
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
    return _construct("%s:%s" % (library, name), build, args, ctx)


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


def user_model(path, cls_name, args, ctx=None):
    """CLASS(**args) from the Python file at path, whose code runs here (the module's docstring); ctx: whose
    memory budget admits it first."""
    if not os.path.isfile(path):
        raise bad_argument("no such Python file: %s" % path)
    module = _import_file(path)
    cls = getattr(module, cls_name, None)
    if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
        found = [n for n, v in vars(module).items() if inspect.isclass(v) and issubclass(v, torch.nn.Module)
                 and v.__module__ == module.__name__]
        what = "no class %s" % cls_name if cls is None else "%s, which is not a torch.nn.Module class" % cls_name
        raise bad_argument("%s has %s" % (path, what), "its nn.Module classes: %s" % (", ".join(found) or "none"))
    return _construct(cls_name, lambda: cls(**args), args, ctx)


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


def _construct(what, build, args, ctx):
    """build(), refused with out_of_memory first when its parameters and buffers would not fit the budget:
    the constructor runs twice, on the meta device first (memory/modules.py; a user's class with side effects
    in __init__ has them twice)."""
    memory.admit_module(ctx, build, what)
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
