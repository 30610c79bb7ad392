"""--trust's rules (formats/trusted.py), name by name: classes that build data are trusted; a function, a
metaclass, a class of a module that runs code or reaches the system, and a subclass of one never are, and
whether a name may be trusted is told without importing the module it names."""
import logging
import subprocess
import sys
import threading

import pytest

from torchsh.errors import TorchshError
from torchsh.formats import statedicts, trusted

NEVER = ["cProfile.run", "timeit.timeit", "timeit.Timer", "profile.run", "profile.Profile", "trace.Trace",
         "doctest.DocTestRunner", "doctest.run_docstring_examples", "pdb.run", "pdb.Pdb", "bdb.Bdb", "code.interact",
         "code.InteractiveConsole", "codeop.Compile", "runpy.run_path", "importlib.import_module",
         "importlib.machinery.SourceFileLoader", "pickle.loads", "pickle.Unpickler", "copyreg._reconstructor",
         "marshal.loads", "shelve.DbfilenameShelf", "subprocess.Popen", "commands.Popen", "os.system",
         "posix.system", "builtins.eval", "builtins.exec", "builtins.type", "__builtin__.eval", "io.FileIO",
         "_io.FileIO", "logging.FileHandler", "zipfile.ZipFile", "tarfile.TarFile", "bz2.BZ2File", "gzip.GzipFile",
         "tempfile.TemporaryDirectory", "shutil.rmtree", "socket.socket", "http.server.HTTPServer",
         "smtplib.SMTP", "ftplib.FTP", "urllib.request.urlopen", "xmlrpc.client.ServerProxy",
         "multiprocessing.Process", "concurrent.futures.ProcessPoolExecutor", "threading.Thread", "threading.Timer",
         "ctypes.CDLL", "pydoc.pager", "webbrowser.open", "pty.spawn", "pathlib.Path", "glob.glob",
         "sqlite3.Connection", "mmap.mmap", "types.FunctionType", "types.CodeType", "functools.partial",
         "operator.attrgetter", "inspect.getsource", "gc.get_objects", "weakref.finalize", "atexit.register",
         "signal.signal", "site.main", "sysconfig.get_paths", "itertools.starmap", "sys.exit", "torch.load",
         "torch.save", "torch.serialization.load", "torch.hub.load", "torch.jit.load", "torch.package.PackageImporter",
         "torch.utils.cpp_extension.load_inline", "torch.multiprocessing.Process", "torch.fx.GraphModule",
         "torch.utils.data.DataLoader", "torch.utils.tensorboard.writer.SummaryWriter", "torch.utils.benchmark.Timer",
         "torch.library.Library", "torch._dynamo.optimize", "torch.testing.assert_close", "numpy.memmap",
         "numpy.load", "enum.EnumMeta", "abc.ABCMeta", "torchsh.daemon.server.Server", "math.pi", "nothing"]
MAY = ["collections.OrderedDict", "collections.defaultdict", "collections.Counter", "argparse.Namespace",
       "types.SimpleNamespace", "datetime.datetime", "datetime.timedelta", "decimal.Decimal", "fractions.Fraction",
       "uuid.UUID", "enum.Enum", "torch.nn.modules.linear.Linear", "torch.nn.modules.container.Sequential",
       "torch.optim.adam.Adam", "torch.Size"]


@pytest.mark.parametrize("name", NEVER)
def test_a_function_or_a_class_that_runs_code_is_never_trusted(name):
    with pytest.raises(TorchshError) as e:
        statedicts.trusted_globals([name])
    assert e.value.code == "bad_argument" and ("never trusted" in e.value.message or "not a class" in e.value.message)


@pytest.mark.parametrize("name", MAY)
def test_classes_that_build_data_are_trusted(name):
    [found] = statedicts.trusted_globals([name])
    assert isinstance(found, type) and trusted.refusal(found) is None


def test_a_class_of_ones_own_over_a_dangerous_base_is_never_trusted_and_the_reason_names_the_base():
    mine = type("Handler", (logging.FileHandler,), {"__module__": "mypkg"})
    assert "subclass of logging.FileHandler" in trusted.refusal(mine)
    assert "subclass of subprocess.Popen" in trusted.refusal(type("P", (subprocess.Popen,), {"__module__": "x"}))
    assert "subclass of threading.Thread" in trusted.refusal(type("T", (threading.Thread,), {"__module__": "x"}))
    assert "metaclass" in trusted.refusal(type("M", (type,), {"__module__": "x"}))
    assert trusted.refusal(type("Config", (dict,), {"__module__": "mypkg"})) is None


def test_classify_tells_what_may_be_trusted_without_importing_what_a_file_names():
    names = ["posix.system", "cProfile.run", "torch.nn.modules.linear.Linear", "antigravity_like_pkg.Thing",
             "this.Thing"]
    before = set(sys.modules)
    may, never = trusted.classify(names)
    assert may == ["torch.nn.modules.linear.Linear", "antigravity_like_pkg.Thing"]
    assert never == ["posix.system", "cProfile.run", "this.Thing"]
    assert set(sys.modules) == before
