"""The `torch` client's import set is pinned: every shell command pays for each module it loads
(`socket` + `json` alone cost ~15 ms, more than the whole command budget; see bench/latency.py)."""
import os
import subprocess
import sys
import tempfile

CLIENT = os.path.join(os.path.dirname(sys.executable), "torch")
# _socket: the C module, not socket.py; daemonctl: builtins only, and loaded on the lifecycle path alone;
# wire and http: the client's connection, call and HTTP, builtins only, shared with daemonctl (no import circle);
# paths and trust: where the socket lives and what the client trusts there, builtins only
ALLOWED = {"torchsh", "torchsh.client", "torchsh.client.main", "torchsh.protocol", "torchsh.paths", "torchsh.trust",
           "torchsh.client.wire",
           "torchsh.client.http", "torchsh.client.daemonctl", "_socket"}


def _imported(args):
    """Module names a Python -IS run imports, from -X importtime (lazy imports included)."""
    p = subprocess.run([sys.executable, "-IS", "-X", "importtime"] + args, capture_output=True, text=True)
    return {line.split("|")[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")
            and "imported package" not in line} - {"package"}


def test_the_client_imports_only_builtins_and_the_protocol_module():
    bare = _imported(["-c", "pass"])
    with tempfile.TemporaryDirectory() as d:  # no daemon there: `daemon status` fails fast, starts nothing
        extra = _imported([CLIENT, "--socket", os.path.join(d, "none.sock"), "daemon", "status"]) - bare
    assert extra <= ALLOWED, "the client now imports %s" % sorted(extra - ALLOWED)
    assert {"torchsh.client.main", "torchsh.protocol"} <= extra


def test_the_launcher_runs_the_real_interpreter_with_isolated_no_site_flags():
    """With no fast path to use (no daemon), the bash launcher execs the Python client: this interpreter, -IS."""
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run(["bash", "-px", CLIENT, "--socket", os.path.join(d, "none.sock"), "daemon", "status"],
                           capture_output=True, text=True)
    assert "+ exec %s -IS %s --socket" % (sys.executable, CLIENT) in p.stderr, p.stderr
    assert p.returncode == 5 and "[daemon_unavailable]" in p.stderr


def test_an_ordinary_command_does_not_load_the_lifecycle_module():
    """daemonctl (stop, restart, the commands that never start a daemon) is paid for on its path only."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(__import__("torchsh").__file__)))
    code = "import sys; sys.path.insert(0, %r); import torchsh.client.main" % src
    assert "torchsh.client.daemonctl" not in _imported(["-c", code])
