"""What `--trust NAME,…` may add to torch.load(weights_only=True): classes, and only classes that build data.

PyTorch's weights_only unpickler (torch/_weights_only_unpickler.py) hands a trusted global to the pickle's
opcodes: REDUCE calls it with arguments the file chooses (`NAME(*args)`), NEWOBJ calls `NAME.__new__(NAME,
*args)`, BUILD gives an instance of it the file's state (its `__setstate__`, else `__dict__.update` and
setattr). A trusted function is therefore a function the file calls with its own arguments (`cProfile.run`
runs a statement, `timeit.timeit` too): a function, or any callable that is not a class, is never trusted.
A class is called the same way, so a class is trusted only when no class in its MRO comes from a module that
runs code or reaches the system (a `subprocess.Popen`, a `logging.FileHandler` or a `zipfile.ZipFile` opens a
process or a file as it is built, a `threading.Thread` subclass is as dangerous as its run): the standard
library is refused but for the modules of plain data (DATA_STDLIB), and so are the modules of PyTorch and of
other packages that load code, write files, spawn processes or reach the network (NEVER), and torchsh's own.
Metaclasses (a class whose instances are classes) are refused too. What a trusted class of your own does when
built is yours to know: docs/security.md says what remains.

Nothing here imports a module a file names: classify() reads sys.modules only; resolve() imports what the
user typed, as `python -c 'import NAME'` would.
"""
import _compat_pickle
import importlib
import inspect
import sys

# The standard library's modules of plain data: their classes build values, open nothing and call nothing
DATA_STDLIB = frozenset(("collections", "_collections", "_collections_abc", "argparse", "enum", "datetime",
                         "_datetime", "decimal", "_decimal", "_pydecimal", "fractions", "numbers", "uuid",
                         "ipaddress", "typing", "abc", "_abc", "dataclasses"))
DATA_STDLIB_CLASSES = frozenset(("types.SimpleNamespace",))
DATA_BUILTINS = frozenset((object, dict, list, tuple, set, frozenset, int, float, complex, str, bytes, bytearray,
                           bool, slice, range))
# Beyond the standard library (where everything outside DATA_STDLIB is refused: trace, cProfile, profile,
# timeit, doctest, pdb, code, runpy, importlib, pickle, os, subprocess, io, logging, zipfile, socket…):
# module prefixes whose classes run code, load code, write files, spawn processes or reach the network
NEVER = (
    # PyTorch's own: loaders of code and archives, compilers, process and network machinery, op registries
    "torch.package", "torch.hub", "torch.jit", "torch.serialization", "torch.utils.cpp_extension",
    "torch.multiprocessing", "torch.distributed", "torch._dynamo", "torch._inductor", "torch.testing", "torch.fx",
    "torch.export", "torch._export", "torch.compiler", "torch.onnx", "torch.library", "torch._library", "torch._ops",
    "torch.classes", "torch._classes", "torch._C._distributed", "torch.profiler", "torch.autograd.profiler",
    "torch.utils.data", "torch.utils.tensorboard", "torch.utils.benchmark", "torch.utils.bottleneck",
    "torch.utils.collect_env", "torch.utils.file_baton", "torch.utils.model_zoo", "torch.utils.hipify",
    "torch._functorch", "torch._higher_order_ops", "torch._subclasses", "torch.utils._python_dispatch",
    # datasets that download in their constructor; serializers; shells, remote and process control
    "torchvision.datasets", "torchvision.io", "torchaudio.datasets", "torchtext.datasets", "datasets",
    "huggingface_hub", "transformers.pipelines", "dill", "cloudpickle", "joblib", "yaml", "IPython", "ipykernel",
    "jupyter_client", "pexpect", "ptyprocess", "paramiko", "fabric", "invoke", "sh", "plumbum", "psutil",
    "docker", "requests", "urllib3", "httpx", "aiohttp", "boto3", "botocore", "fsspec", "h5py", "tables",
    "sqlalchemy", "git", "jinja2", "mako", "sympy", "numexpr", "pandas.io", "setuptools", "pip", "_distutils_hack",
    "pkg_resources", "numpy.lib.npyio", "numpy.f2py", "numpy.distutils", "numpy.testing",
    # torchsh itself, and whatever runs as a program's __main__
    "torchsh", "__main__",
)
# Single classes elsewhere that open a file or a process when built
NEVER_CLASSES = frozenset(("numpy.memmap", "numpy.lib._datasource.DataSource"))
WHAT_CAN = ("classes only: your own (an nn.Module subclass, a dataclass, an Enum), collections.*, "
            "argparse.Namespace, datetime.*, decimal.Decimal, uuid.UUID, types.SimpleNamespace")


def refusal(found):
    """Why a global (the object a name resolved to) is never trusted, or None when it may be."""
    if not inspect.isclass(found):
        return "it is a %s, and only classes are trusted" % ("function" if callable(found) else type(found).__name__)
    if issubclass(found, type):
        return "it is a metaclass (its instances are classes)"
    for cls in found.__mro__:
        why = _module_refusal(cls.__module__, "%s.%s" % (cls.__module__, cls.__qualname__), cls)
        if why:
            return why if cls is found else "it is a subclass of %s.%s, which %s" % (
                cls.__module__, cls.__qualname__, why.removeprefix("it "))
    return None


def _module_refusal(module, full, cls=None):
    if cls in DATA_BUILTINS or full in DATA_STDLIB_CLASSES:
        return None
    top = module.split(".")[0]
    if module == "builtins" or (top in sys.stdlib_module_names and top not in DATA_STDLIB):
        return ("it comes from %s, and of the standard library only the classes of plain data are trusted "
                "(collections, argparse, enum, dataclasses, datetime, decimal, fractions, uuid…)" % module)
    if full in NEVER_CLASSES:
        return "it opens a file as it is built"
    if any(module == p or module.startswith(p + ".") for p in NEVER):
        return "it comes from %s, which runs code, writes files or reaches the network" % module
    return None


def by_name(name):
    """Why a dotted name is never trusted, from the name alone (nothing imported), or None."""
    module = python3_name(name).rpartition(".")[0]
    return _module_refusal(module, python3_name(name)) if module else "it names no module"


def python3_name(name):
    """A pickle's Python 2 name as Python 3's, as the unpickler reads it (`commands.Popen` is subprocess's)."""
    module, _, attr = name.rpartition(".")
    module, attr = _compat_pickle.NAME_MAPPING.get((module, attr), (module, attr))
    return "%s.%s" % (_compat_pickle.IMPORT_MAPPING.get(module, module), attr)


def classify(names):
    """(those of names that --trust may allow, those it never will): by the name, then by the object where
    its module is imported already; a name of a module not imported yet counts as may (a class of yours)."""
    may, never = [], []
    for name in names:
        found = _imported(name)
        (never if by_name(name) or (found is not None and refusal(found)) else may).append(name)
    return may, never


def _imported(name):
    words = python3_name(name).split(".")
    for cut in range(len(words) - 1, 0, -1):
        found = sys.modules.get(".".join(words[:cut]))
        if found is None:
            continue
        try:
            for word in words[cut:]:
                found = getattr(found, word)
        except AttributeError:
            return None
        return found
    return None


def resolve(name):
    """The object a dotted name imports to (the longest importable module, then attributes), else None."""
    words = python3_name(name).split(".")
    for cut in range(len(words) - 1, 0, -1):
        try:
            found = importlib.import_module(".".join(words[:cut]))
            for word in words[cut:]:
                found = getattr(found, word)
        except Exception:  # an import may raise anything; any failure means "not a global by that name"
            continue
        return found
    return None
