"""A second daemon for tests of objects that move between daemons (`cp`, `session push`, persistence).

It listens on paths.context_socket(NAME) with XDG_RUNTIME_DIR pointed at a private temp folder, as a
context's forwarder would, and is always stopped. Plain module (tests import it; never from conftest)."""
from torchsh import paths
import os
import shutil
import subprocess
import sys
import tempfile
import time


class SecondDaemon:
    def __init__(self, sh, name="t2", env=None):
        self.sh, self.name = sh, name
        self.folder = tempfile.mkdtemp(prefix="tsh2-")   # short: AF_UNIX paths are limited to ~107 bytes
        self.xdg = os.path.join(self.folder, "xdg")
        os.makedirs(os.path.join(self.xdg, "torchsh", "contexts"), mode=0o700)
        os.chmod(self.xdg, 0o700)
        os.chmod(os.path.join(self.xdg, "torchsh"), 0o700)
        code = "from torchsh import paths; print(paths.context_socket(%r))" % name
        self.socket = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, XDG_RUNTIME_DIR=self.xdg),
                                     capture_output=True, text=True, check=True).stdout.strip()
        self.env = dict(TORCHSH_SOCKET=self.socket, **(env or {}))

    def run(self, script, **kw):
        return self.sh.run(script, env=dict(self.env, **kw.pop("env", {})), **kw)

    def __call__(self, script, **kw):
        r = self.run(script, **kw)
        assert r.code == 0, "exit %d\n--- script\n%s\n--- stderr\n%s" % (r.code, script, r.err)
        return r.out.rstrip("\n")

    def fetch(self, handle):
        import torch
        path = self.sh.tmp("fetch2.pt")
        self("torch save %s %s" % (handle, path))
        return torch.load(path, weights_only=True)

    def stop(self):
        self.run("torch daemon stop")
        deadline = time.time() + 20
        while os.path.exists(self.socket) and time.time() < deadline:
            time.sleep(0.05)
        shutil.rmtree(self.folder, ignore_errors=True)
