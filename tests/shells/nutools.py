"""Nushell for the tests: find (or npm-install) nu 0.115.1, and run scripts with torch.nu loaded."""

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NU_VERSION = "0.115.1"
NU = os.path.join(ROOT, ".tools", "nu", "node_modules", "@nushell", "linux-x64", "bin", "nu")
MODULE = os.path.join(ROOT, "src", "torchsh", "shells", "torch.nu")


def ensure_nu():
    """Path of the nu binary, installing nushell from npm into .tools/nu when it is not there yet."""
    if not os.access(NU, os.X_OK) and shutil.which("npm"):
        os.makedirs(os.path.join(ROOT, ".tools", "nu"), exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                        os.path.join(ROOT, ".tools", "nu"), "nushell@" + NU_VERSION],
                       capture_output=True, timeout=600)
    if not os.access(NU, os.X_OK):
        pytest.fail("nushell %s is missing at %s and `npm install nushell@%s` could not provide it; "
                    "run scripts/bootstrap.sh --with-shells" % (NU_VERSION, NU, NU_VERSION))
    return NU


@dataclass
class NuResult:
    out: str
    err: str
    code: int


class Nu:
    """Runs nu scripts with torch.nu loaded, against the session daemon (the `sh` fixture's socket)."""

    def __init__(self, sh, module=MODULE):
        self.sh, self.module, self.bin = sh, module, ensure_nu()
        self.env = dict(sh.env)

    def run(self, script, env=None, module=None, timeout=180):
        """Result(out, err, code) of a nu script; `use torch.nu` comes first."""
        text = "use %s\n%s\n" % (module or self.module, script)
        with tempfile.NamedTemporaryFile("w", suffix=".nu", dir=self.sh.folder, delete=False) as f:
            f.write(text)
        p = subprocess.run([self.bin, "--no-config-file", f.name], capture_output=True, text=True,
                           env=dict(self.env, **(env or {})), cwd=self.sh.folder, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return NuResult(p.stdout, p.stderr, p.returncode)

    def __call__(self, script, **kw):
        """Run and require exit 0; return stdout without its trailing newline."""
        r = self.run(script, **kw)
        assert r.code == 0, "nu exit %d\n--- script\n%s\n--- stderr\n%s" % (r.code, script, r.err)
        return r.out.rstrip("\n")

    def json(self, expr, **kw):
        """The value of one nu expression, through `to json`."""
        return json.loads(self("%s | to json --raw | print" % expr, **kw))

    def tab(self, line, setup=""):
        """What nu's own completion offers at the end of `line` (after `use torch.nu` and `setup`):
        `nu --ide-complete` parses the file and runs the completers, as TAB in the REPL does."""
        text = "use %s\n%s\n%s" % (self.module, setup, line)
        with tempfile.NamedTemporaryFile("w", suffix=".nu", dir=self.sh.folder, delete=False) as f:
            f.write(text)
        # the file is parsed, not run, so the `use`'s export-env has not set what the trust check reads
        env = dict(self.env, TORCHSH_NU_UID=str(os.getuid()), TORCHSH_NU_USER=pwd.getpwuid(os.getuid()).pw_name)
        p = subprocess.run([self.bin, "--no-config-file", "--ide-complete", str(len(text.encode())), f.name],
                           capture_output=True, text=True, env=env, cwd=self.sh.folder, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["completions"]

    def completer(self, call):
        """The value of a call of torch.nu's own defs (`nu-complete torch "torch forward "`, as nu calls
        a completer): `source` reaches the module's internal defs, which `use` hides."""
        # -c, not a script file, which would run the module's `main` at its end; the value prints itself
        # (the module's `print` is `torch print`)
        script = "source %s; %s | to json --raw" % (self.module, call)
        p = subprocess.run([self.bin, "--no-config-file", "-c", script], capture_output=True, text=True,
                           env=self.env, cwd=self.sh.folder, timeout=60, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)
