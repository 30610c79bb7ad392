"""`torch nn load --trust NAME` allows classes that build data, never a function or a class that runs code
(issue 35): each known gadget, pickled into a real .pt as an attacker would, is refused with a stable code both
bare (file_error, naming it as never trusted) and named in --trust as the refusal lists it (bad_argument), and
its payload never runs; the classes people do pickle (their own nn.Module, a dataclass, an Enum,
argparse.Namespace, collections.OrderedDict) load. formats/trusted.py has the rules."""
import argparse
import bz2
import code
import collections
import cProfile
import doctest
import importlib
import logging
import os
import pdb
import pickle
import profile
import re
import runpy
import subprocess
import sys
import timeit
import trace
import zipfile

import numpy
import pytest
import torch

_NEEDS = re.compile(r"needs globals beyond weights_only: (.*); nothing was unpickled")


def _stmt(marker):
    return "open(%r, 'w').close()" % marker


class _Touch:
    """What os.system would run, pickled by its own reduce: for the pickle inside a pickle."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, ("touch %s" % self.marker,)


def _runpy_file(marker):
    path = marker + ".py"
    with open(path, "w") as f:
        f.write(_stmt(marker) + "\n")
    return path


def _inner_pt(marker):
    path = marker + ".inner.pt"
    torch.save({"w": _Touch(marker)}, path)
    return path


def _tensorboard_writer():
    from torch.utils.tensorboard import SummaryWriter
    return SummaryWriter


# id -> (the callable a pickle's REDUCE calls, its arguments for a marker path): each makes the marker when run
GADGETS = {
    "cProfile.run": lambda m: (cProfile.run, (_stmt(m),)),
    "timeit.timeit": lambda m: (timeit.timeit, (_stmt(m) + "; 1/0",)),
    "profile.run": lambda m: (profile.run, (_stmt(m),)),
    "trace.Trace": lambda m: (trace.Trace, ()),
    "doctest": lambda m: (doctest.run_docstring_examples, (">>> " + _stmt(m) + "\n", {})),
    "pdb.run": lambda m: (pdb.run, (_stmt(m),)),
    "code.interact": lambda m: (code.interact, ("",)),
    "code.InteractiveConsole": lambda m: (code.InteractiveConsole, ()),
    "runpy": lambda m: (runpy.run_path, (_runpy_file(m),)),
    "importlib": lambda m: (importlib.import_module, ("json",)),
    "pickle.loads": lambda m: (pickle.loads, (pickle.dumps(_Touch(m)),)),
    "torch.load": lambda m: (torch.load, (_inner_pt(m),)),
    "os.system": lambda m: (os.system, ("touch %s" % m,)),
    "builtins.exec": lambda m: (exec, (_stmt(m),)),
    "subprocess.Popen": lambda m: (subprocess.Popen, (["touch", m],)),
    "logging.FileHandler": lambda m: (logging.FileHandler, (m,)),
    "zipfile.ZipFile": lambda m: (zipfile.ZipFile, (m, "w")),
    "bz2.BZ2File": lambda m: (bz2.BZ2File, (m, "w")),
    "numpy.memmap": lambda m: (numpy.memmap, (m, "uint8", "w+", 0, (1,))),
    "tensorboard.SummaryWriter": lambda m: (_tensorboard_writer(), (m,)),
}


class _Gadget:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def _malicious(sh, gadget):
    """(a .pt whose state dict's tensor is the gadget's call, the marker its payload would make)."""
    path, marker = sh.tmp("evil.pt"), sh.tmp("pwned")
    torch.save({"weight": _Gadget(*GADGETS[gadget](marker))}, path)
    return path, marker


@pytest.mark.parametrize("gadget", sorted(GADGETS))
def test_a_gadget_is_refused_bare_and_named_in_trust_and_its_payload_never_runs(sh, gadget):
    path, marker = _malicious(sh, gadget)
    m = sh("torch nn linear 2 2")
    r = sh.run("torch nn load %s %s" % (m, path))
    assert r.code != 0 and "[file_error]" in r.err, r.err
    needed = _NEEDS.search(r.err).group(1).split()
    assert "never trusted: " in r.err, r.err
    r = sh.run("torch nn load %s %s --trust %s" % (m, path, ",".join(needed)))  # as a user copying the refusal
    assert not os.path.exists(marker), "the payload of %s ran" % gadget
    assert r.code == 2 and "[bad_argument]" in r.err and "never trusted: " in r.err, r.err


def test_the_refusal_tells_classes_it_can_trust_from_functions_it_never_will(sh):
    path = sh.tmp("mixed.pt")
    torch.save({"weight": _Gadget(cProfile.run, ("1",)), "lin": torch.nn.Linear(2, 2)}, path)
    r = sh.run("torch nn load $(torch nn linear 2 2) %s" % path)
    assert "`--trust torch.nn.modules.linear.Linear` allows that class, if you trust this file" in r.err, r.err
    assert "never trusted: cProfile.run (functions, or classes that run code or reach the system)" in r.err, r.err


_MYPKG = '''
import argparse, dataclasses, enum, logging
import torch


class MyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(2, 2)


@dataclasses.dataclass
class Config:
    lr: float = 0.1
    depth: int = 2


class Color(enum.Enum):
    RED = 1


class Handler(logging.FileHandler):
    """A class of one's own whose base opens a file as it is built."""


def touch(path):
    open(path, "w").close()
'''


@pytest.fixture
def with_mypkg(fresh_sh):
    """A daemon that imports `mypkg` (PYTHONPATH), and the test process too, so its pickles name it."""
    sh = fresh_sh(start=False)
    root = os.path.join(sh.folder, "pkgs")
    os.makedirs(os.path.join(root, "mypkg"))
    with open(os.path.join(root, "mypkg", "__init__.py"), "w") as f:
        f.write(_MYPKG)
    sh.env["PYTHONPATH"] = root
    sh("torch daemon start")
    sys.path.insert(0, root)
    try:
        yield sh, importlib.import_module("mypkg")
    finally:
        sys.path.remove(root)
        sys.modules.pop("mypkg", None)


def test_the_classes_people_pickle_load_when_trusted(with_mypkg):
    sh, mypkg = with_mypkg
    torch.manual_seed(3)
    net = mypkg.MyNet()
    whole, wrapped = sh.tmp("whole.pt"), sh.tmp("wrapped.pt")
    torch.save(net, whole)
    torch.save({"state_dict": collections.OrderedDict(("body." + k, v) for k, v in net.body.state_dict().items()),
                "args": argparse.Namespace(lr=0.1), "config": mypkg.Config(), "color": mypkg.Color.RED}, wrapped)
    m = sh("torch nn sequential 'linear 2 2'")
    needed = _NEEDS.search(sh.run("torch nn load %s %s" % (m, whole)).err).group(1).split()
    assert "mypkg.MyNet" in needed
    assert sh("torch nn load %s %s --map body.=0. --trust %s" % (m, whole, ",".join(needed))).startswith(
        "loaded 2 of 2 keys")
    trusted = "argparse.Namespace,mypkg.Config,mypkg.Color,collections.OrderedDict"
    assert sh("torch nn load %s %s --key state_dict --map body.=0. --trust %s" % (m, wrapped, trusted)).startswith(
        "loaded 2 of 2 keys")
    path = sh.tmp("w.pt")
    sh("torch save $(torch nn parameters %s | head -1) %s" % (m, path))
    assert torch.equal(torch.load(path, weights_only=True), net.body.weight.detach())


def test_a_class_of_ones_own_over_a_dangerous_base_and_a_function_of_ones_own_are_never_trusted(with_mypkg):
    sh, mypkg = with_mypkg
    for fn, name in ((mypkg.Handler, "mypkg.Handler"), (mypkg.touch, "mypkg.touch")):
        path, marker = sh.tmp("evil.pt"), sh.tmp("pwned")
        torch.save({"weight": _Gadget(fn, (marker,))}, path)
        r = sh.run("torch nn load $(torch nn linear 2 2) %s --trust %s" % (path, name))
        assert r.code == 2 and "[bad_argument]" in r.err and "never trusted: it is " in r.err, r.err
        assert not os.path.exists(marker)
