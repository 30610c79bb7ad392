"""Another local user, for the tests that check it cannot make your `torch` run commands, read your argv or
grow your files (tests/e2e/test_trust*.py; issue 10, Critical).

As root, support/twouid.py provides a throwaway system user, the "intruder", that plants what a second user
of a shared machine could plant in a /tmp-like folder: `tmpdir_1777` is a fresh 1777 folder the victim's
TMPDIR points at, so the victim's fallback runtime folder is $TMPDIR/torchsh-0 (`_planted_folder`, made
first by the intruder). The victim is the test's uid running the real client, the bash/zsh functions and
the installed launcher (`_victim`). Every server the intruder runs (`Intruder.serve`) is killed at the end of
the test; twouid deletes the user at the end of the module.
"""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from support.twouid import other_user  # noqa: F401  (a fixture: a test module imports it from here too)

BIN = os.path.dirname(sys.executable)
CLIENT = os.path.join(BIN, "torch")
SYSTEM_PYTHON = "/usr/bin/python3"  # the intruder cannot enter root's virtualenv; the stdlib is enough


class Intruder:
    def __init__(self, name, uid, gid):
        self.name, self.uid, self.gid = name, uid, gid
        self.procs = []

    def own(self, path, mode):
        """Make `path` the intruder's, as if the intruder had made it."""
        os.lchown(path, self.uid, self.gid)
        if not os.path.islink(path):
            os.chmod(path, mode)

    def serve(self, script, *args, pass_fds=()):
        p = subprocess.Popen([SYSTEM_PYTHON, "-c", script] + list(args), user=self.uid, group=self.gid,
                             extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"}, pass_fds=pass_fds,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
        self.procs.clear()


@pytest.fixture(scope="module")
def intruder(other_user):
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip("needs %s to run the second user's servers" % SYSTEM_PYTHON)
    uid, gid = other_user
    who = Intruder(pwd.getpwuid(uid).pw_name, uid, gid)
    try:
        yield who
    finally:
        who.stop()


@pytest.fixture
def tmpdir_1777(intruder):
    """A fresh stand-in for /tmp (mode 1777, short path); the victim's TMPDIR points at it."""
    d = tempfile.mkdtemp(prefix="tsh-tr-")
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        intruder.stop()
        shutil.rmtree(d, ignore_errors=True)


def _victim_env(tmp, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSH_") and k != "XDG_RUNTIME_DIR"}
    env.update(TMPDIR=tmp, PATH=BIN + os.pathsep + env.get("PATH", ""), TORCHSH_TTL="1m", **extra)
    return env


def _victim(args, tmp, **extra):
    """The victim's command, bounded: a hang is a failure, not a stuck suite."""
    return subprocess.run(args, capture_output=True, text=True, env=_victim_env(tmp, **extra), timeout=60,
                          stdin=subprocess.DEVNULL, cwd=tmp)


def _planted_folder(intruder, tmp, mode=0o755):
    """The victim's predictable fallback folder, made first by the intruder."""
    folder = os.path.join(tmp, "torchsh-%d" % os.getuid())
    os.mkdir(folder)
    intruder.own(folder, mode)
    return folder


def _wait_for(path, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "the planted server never came up"
        time.sleep(0.02)


def _heard(record):
    """What the planted server received, beyond the bare fact of a connection."""
    with open(record, "rb") as f:
        return f.read().replace(b"[connection]", b"")


def _refused(r, *words):
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "[untrusted]" in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
