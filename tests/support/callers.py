"""The callers of the daemon that tests/e2e/test_replies*.py carry every row of protocol.REPLIES through:
`callers.run(caller, script)` runs shell text through the Python `torch` client, the installed launcher, the
bash or zsh function, or torch.nu (SHELLS are the ones a bash or zsh script's `torch` can be, then "nu"),
with a `torch` shim on PATH that logs what the caller handed over to the client; `raw` and `post` are the
JSON API's requests with a Torchsh-Replies header.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from torchsh import protocol
from support.apicall import UnixHTTPConnection
from support.pyclient import PYCLIENT

BIN = os.path.dirname(sys.executable)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NU = os.path.join(ROOT, ".tools", "nu", "node_modules", "@nushell", "linux-x64", "bin", "nu")
MODULE = os.path.join(ROOT, "src", "torchsh", "shells", "torch.nu")
SHELLS = ("client", "launcher", "bash", "zsh")  # the callers a bash or zsh script's `torch` can be


class Unseen(list):
    """The launcher's handovers: it runs the Python client in its own process (exec), with no PATH lookup a shim
    could log, so what it handed over is not seen; its output and status are checked all the same."""

    def __eq__(self, other):
        return isinstance(other, list)

    __hash__ = None


class Callers:
    """Runs one piece of shell text (written once for bash and zsh, once for nu) through each caller."""

    def __init__(self, sh, folder):
        self.sh, self.folder = sh, folder
        self.log = os.path.join(folder, "handed-over")
        shim = os.path.join(folder, "shim")
        os.makedirs(shim, exist_ok=True)
        with open(os.path.join(shim, "torch"), "w") as f:  # logs what it is run for, then runs the client
            f.write('#!/bin/sh\necho "$*" >> %s\nexec %s/torch "$@"\n' % (self.log, BIN))
        os.chmod(os.path.join(shim, "torch"), 0o755)
        self.env = dict(sh.env, PATH=shim + os.pathsep + sh.env["PATH"])

    def handed_over(self):
        """The command lines the client ran since the last call (the shim's log), emptied."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            lines = [line for line in f.read().splitlines() if not line.startswith("init ")]  # the function's own
        os.unlink(self.log)
        return lines

    def run(self, caller, script, env=None, stdin=None):
        """(stdout, exit status, the command lines handed over to the client) of script run by caller."""
        self.handed_over()
        env = dict(self.env, **(env or {}))
        if caller == "client":  # the Python client itself, no shim
            argv, env["PATH"] = ["bash", "-c", 'torch() { %s "$@"; }\n%s' % (PYCLIENT, script)], self.sh.env["PATH"]
        elif caller == "launcher":  # the installed `torch`, no shim (it hands over within its own process)
            argv, env["PATH"] = ["bash", "-c", script], self.sh.env["PATH"]
        elif caller == "bash":
            argv = ["bash", "-c", 'eval "$(torch init bash)"\n' + script]
        elif caller == "zsh":
            argv = [shutil.which("zsh") or pytest.fail("zsh is not installed: scripts/bootstrap.sh --with-shells"),
                    "-f", "-c", 'eval "$(torch init zsh)"\n' + script]
        else:  # nu: typed commands, or by name (`torch "op" …` goes to the module's main)
            path = os.path.join(self.folder, "script.nu")
            with open(path, "w") as f:
                f.write("use %s\n%s\n" % (MODULE, script))
            argv = [NU, "--no-config-file", path]
        p = subprocess.run(argv, env=env, cwd=self.folder, capture_output=True, text=True, timeout=300,
                           input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
        handed = self.handed_over()
        return p.stdout, p.returncode, Unseen() if caller == "launcher" else handed, p.stderr


@pytest.fixture
def callers(sh, tmp_path):
    return Callers(sh, str(tmp_path))


def raw(sock, method, path, body=b"", replies=None, headers=None):
    """(status, headers, body bytes) of one request with a Torchsh-Replies header listing `replies`."""
    conn = UnixHTTPConnection(sock)
    hdrs = dict(headers or {})
    if replies is not None:
        hdrs["Torchsh-Replies"] = " ".join(replies)
    try:
        conn.request(method, path, body=body, headers=hdrs)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def cli_body(argv, tty=True, stdin=None):
    return protocol.encode_cli_request([a.encode() for a in argv], b"/", tty, [], stdin)


def post(sock, op, body, replies=None):
    status, _, text = raw(sock, "POST", "/v1/ops/" + op, json.dumps(body).encode(), replies)
    return status, json.loads(text)
