"""Shared fixtures: one private daemon per test session, and `sh`, which runs real bash.

Every test drives the installed `torch` (the .venv launcher) through `bash -c`, against a daemon on
a socket in a private temp folder; the daemon is stopped at the end of the session, pass or fail.
In-process PyTorch is the oracle: `sh.fetch(handle)` brings a tensor back bit for bit (through a
a .pt file read with weights_only=True), `sh.put(tensor)` sends one in.

Tiers (scripts/test.sh). `--fast`, the edit loop (under 4 minutes on 2 cores), runs tests/unit and
tests/smoke (a user's first hour through bash, zsh and nu, and 12 of the differential pipelines of
tests/e2e/test_pipelines.py) less what is marked `slow`; no arguments runs
everything, then tests/e2e again through the fast bash function, less `slow` but for what is marked
`fastpath` (the docs' examples, the lifecycle races: what that transport changes). `slow` goes on a test that takes 5 s or
more in a full run on 2 cores (read the run's --durations), and on a whole module (`pytestmark =
pytest.mark.slow`) when three or more such tests hold most of its time (doc examples, parity sweeps,
fuzzing, lifecycle races, distributed fits). So a new unit test stays fast or is marked, tests/smoke stays
a few seconds, and a new e2e file needs a mark only where that rule says. A test that needs a tool
(zsh, fish, sshd, a second uid) asks tests/support/required.py: a skip here, a failure in CI.
"""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest

BIN = os.path.dirname(sys.executable)
# TORCHSH_TEST_PRELUDE: shell text run before each script, e.g. `eval "$(torch init bash)"` to run
# the whole CLI suite through the fast bash path (see tests/README or scripts/test.sh).
PRELUDE = os.environ.get("TORCHSH_TEST_PRELUDE", "")


@dataclass
class Result:
    out: str
    err: str
    code: int


class Shell:
    """Runs bash scripts against one daemon."""

    def __init__(self, socket, folder):
        self.socket = socket
        self.folder = folder
        self.env = dict(os.environ)
        for k in list(self.env):
            # BASH_FUNC_…: a shell that ran `torch init bash` exports its fast-path function; the tests
            # choose the path themselves (PRELUDE), so an inherited one must not take over `torch`
            if k.startswith(("TORCHSH_", "BASH_FUNC_", "__torchsh_")) and k != "TORCHSH_TEST_PRELUDE":
                del self.env[k]
        self.env.update(TORCHSH_SOCKET=socket, PATH=BIN + os.pathsep + self.env.get("PATH", ""),
                        TORCHSH_TTL="30m")
        self._n = 0

    def run(self, script, stdin=None, env=None, cwd=None, timeout=120):
        full = (PRELUDE + "\n" + script) if PRELUDE else script
        e = dict(self.env, **(env or {}))
        p = subprocess.run(["bash", "-c", full], input=stdin, capture_output=True, text=True, env=e,
                           cwd=cwd or self.folder, timeout=timeout,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
        return Result(p.stdout, p.stderr, p.returncode)

    def __call__(self, script, **kw):
        """Run and require exit 0; return stdout without its trailing newline."""
        r = self.run(script, **kw)
        assert r.code == 0, "exit %d\n--- script\n%s\n--- stderr\n%s" % (r.code, script, r.err)
        return r.out.rstrip("\n")

    def tmp(self, name):
        self._n += 1
        return os.path.join(self.folder, "%d-%s" % (self._n, name))

    def fetch(self, handle):
        """The tensor behind a handle, exactly (dtype, shape, bits), via a safetensors file."""
        import torch
        path = self.tmp("fetch.pt")
        self("torch save %s %s" % (handle, path))
        return torch.load(path, weights_only=True)

    def put(self, tensor, requires_grad=False):
        import torch
        path = self.tmp("put.pt")
        torch.save(tensor.contiguous(), path)
        h = self("torch load %s" % path)
        if requires_grad:
            self("torch requires_grad %s true" % h)
        return h


def start_daemon(folder):
    sock = os.path.join(folder, "torchd.sock")
    shell = Shell(sock, folder)
    shell("torch daemon start")
    return shell


def stop_daemon(shell):
    shell.run("torch daemon stop")
    deadline = time.time() + 20
    while os.path.exists(shell.socket) and time.time() < deadline:
        time.sleep(0.05)


@contextlib.contextmanager
def own_daemon():
    """A daemon in a folder of its own, stopped and the folder removed after."""
    folder = tempfile.mkdtemp(prefix="tsh-")  # short: AF_UNIX paths are limited to ~107 bytes
    shell = start_daemon(folder)
    try:
        yield shell
    finally:
        stop_daemon(shell)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def sh():
    with own_daemon() as shell:
        yield shell


@pytest.fixture
def fresh_sh():
    """A daemon of the test's own (lifecycle tests that stop, restart or race it)."""
    folder = tempfile.mkdtemp(prefix="tsh-")
    shells = []

    def make(start=True):
        s = start_daemon(folder) if start else Shell(os.path.join(folder, "torchd.sock"), folder)
        shells.append(s)
        return s
    try:
        yield make
    finally:
        for s in shells:
            stop_daemon(s)
        subprocess.run(["pkill", "-f", "torchsh.daemon --socket %s" % folder], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
