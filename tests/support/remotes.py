"""Remote-context helpers for the tests: a second torchd that listens on tls://127.0.0.1:PORT from its own
private folder, a caller's environment with its own config and runtime folders (so `context use` and the
forwarders never touch the real ones), and a teardown that stops every daemon and forwarder it started.
Use: `from support.remotes import TLSRemote, caller_env, stop_all` (tests/ is on sys.path)."""
import contextlib
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

BIN = os.path.dirname(sys.executable)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def private_folder(prefix):
    """A short 0700 folder in /tmp (AF_UNIX paths must stay under ~107 bytes)."""
    return tempfile.mkdtemp(prefix=prefix)


def caller_env(folder, **extra):
    """The environment of a user whose config (contexts) and runtime (forwarder sockets) live in folder."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TORCHSH_", "BASH_FUNC_", "__torchsh_")) or k == "TORCHSH_TEST_PRELUDE"}
    for sub in ("cfg", "rt"):
        os.makedirs(os.path.join(folder, sub), mode=0o700, exist_ok=True)
    env.update(XDG_CONFIG_HOME=os.path.join(folder, "cfg"), XDG_RUNTIME_DIR=os.path.join(folder, "rt"),
               PATH=BIN + os.pathsep + env.get("PATH", ""), TORCHSH_TTL="30m")
    env.update(extra)
    return env


class TLSRemote:
    """A torchd serving tls://127.0.0.1:PORT; its socket, log, certificate and token in folder/remote."""

    def __init__(self, folder):
        self.dir = os.path.join(folder, "remote")
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.sock = os.path.join(self.dir, "torchd.sock")
        self.token_file = os.path.join(self.dir, "torchd.tls.token")
        self.port = free_port()
        self.url = "tls://127.0.0.1:%d" % self.port
        self.env = caller_env(folder, TORCHSH_SOCKET=self.sock)

    def start(self):
        r = subprocess.run(["torch", "daemon", "start"], env=dict(self.env, TORCHSH_LISTEN=self.url),
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        with open(os.path.join(self.dir, "torchd.log")) as f:
            found = re.findall(r"listening on tls://127\.0\.0\.1:%d; certificate (SHA256:\S+);" % self.port, f.read())
        assert found, "torchd did not print its certificate's fingerprint"
        self.fingerprint = found[-1]
        return self

    def stop(self):
        subprocess.run(["torch", "daemon", "stop"], env=self.env, capture_output=True, timeout=60)


@contextlib.contextmanager
def running(prefix):
    """A TLSRemote started in a private folder of its own (its `folder` attribute), stopped with every forwarder
    and its folder removed at the end: a module's `remote` fixture is `with running(PREFIX) as r: yield r`."""
    folder = private_folder(prefix)
    daemon = TLSRemote(folder)
    try:
        daemon.start()
        daemon.folder = folder
        yield daemon
    finally:
        daemon.stop()
        stop_all(folder)
        shutil.rmtree(folder, ignore_errors=True)


def stop_all(folder):
    """Stop the forwarders under folder/rt and any local daemon there (a test may have started one)."""
    from torchsh.client.contexts import forwarder
    for lock in glob.glob(os.path.join(folder, "rt", "torchsh", "contexts", "*.lock")):
        forwarder.stop(lock[:-len(".lock")] + ".sock")
    subprocess.run(["torch", "daemon", "stop"], env=caller_env(folder), capture_output=True, timeout=60)


class Result:
    def __init__(self, p):
        self.out, self.err, self.code = p.stdout, p.stderr, p.returncode


def bash(script, env, stdin=None, timeout=120):
    """Run script in real bash with env (TORCHSH_TEST_PRELUDE first, as the `sh` fixture does)."""
    prelude = os.environ.get("TORCHSH_TEST_PRELUDE", "")
    p = subprocess.run(["bash", "-c", (prelude + "\n" + script) if prelude else script], env=env,
                       input=stdin, capture_output=True, text=True, timeout=timeout,
                       stdin=None if stdin is not None else subprocess.DEVNULL)
    return Result(p)
