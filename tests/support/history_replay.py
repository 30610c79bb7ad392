"""`torch history --python` for the tests: the script written for a handle (`script`), and that script run
with `--check` in a fresh `python -I`, which replays the requests and compares every object bit for bit
(`check`). Use: `from support.history_replay import check as _check, script as _script`."""
import subprocess
import sys


def script(sh, target, extra=""):
    path = sh.tmp("s.py")
    sh("torch history --python --for %s %s > %s" % (target, extra, path))
    with open(path) as f:
        return path, f.read()


def check(path):
    p = subprocess.run([sys.executable, "-I", path, "--check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout
