"""Cold start (first command with no daemon running) and the daemon's idle memory.

References: `python -c "import torch"` on the same interpreter (the floor of any daemon start), and
the resident memory of a bare process that did `import torch`.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

from bench.common import CLIENT, PYTHON, interleaved, row, spawn_ms, value_row

COLD_TARGET_S, MEMORY_TARGET_MB = 0.5, 60.0
_RSS_OF_IMPORT_TORCH = ("import torch\n"
                        "print([int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')][0])")


def _rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


class _Fresh:
    """A socket path with no daemon behind it; stops whatever the measured command started."""

    def __init__(self, base_env, device=None):
        self.folder = tempfile.mkdtemp(prefix="tshc-")
        self.env = dict(base_env, TORCHSH_SOCKET=os.path.join(self.folder, "torchd.sock"))
        if device:
            self.env["TORCHSH_DEVICE"] = device

    def stop(self):
        subprocess.run([CLIENT, "daemon", "stop"], env=self.env, capture_output=True)
        deadline = time.time() + 20
        while os.path.exists(self.env["TORCHSH_SOCKET"]) and time.time() < deadline:
            time.sleep(0.05)
        shutil.rmtree(self.folder, ignore_errors=True)


def cold_start(daemon, quick=False, device=None):
    def first_command():
        fresh = _Fresh(daemon.env, device)
        try:
            return spawn_ms([CLIENT, "randn", "[3]"], fresh.env)
        finally:
            fresh.stop()

    def import_torch():
        return spawn_ms([PYTHON, "-c", "import torch"], daemon.env)
    subj, ref, noise = interleaved(first_command, import_torch, rounds=2 if quick else 3, per_round=1 if quick else 2)
    r = row("cold start: first `torch randn '[3]'`, no daemon", subj, "python -c 'import torch'", ref,
            target="<= import torch + %g s" % COLD_TARGET_S, noise=noise)
    r["met"] = r["median_ms"] <= r["ref_median_ms"] + COLD_TARGET_S * 1000
    return [r]


def idle_memory(daemon, device=None):
    fresh = _Fresh(daemon.env, device)
    try:
        subprocess.run([CLIENT, "randn", "[3]"], env=fresh.env, capture_output=True, check=True)
        status = json.loads(subprocess.run([CLIENT, "daemon", "status", "--json"], env=fresh.env,
                                           capture_output=True, text=True, check=True).stdout)
        time.sleep(0.5)
        daemon_mb = _rss_kb(status["pid"]) / 1024
    finally:
        fresh.stop()
    bare_mb = int(subprocess.run([PYTHON, "-c", _RSS_OF_IMPORT_TORCH], env=daemon.env, capture_output=True,
                                 text=True, check=True).stdout) / 1024
    r = value_row("daemon idle memory (RSS after one command)", daemon_mb, "MB", "bare `import torch` process",
                  bare_mb, target="<= import torch + %g MB" % MEMORY_TARGET_MB,
                  met=daemon_mb <= bare_mb + MEMORY_TARGET_MB, note="+%.0f MB" % (daemon_mb - bare_mb))
    return [r]


def run(daemon, quick=False, device=None):
    return cold_start(daemon, quick, device) + idle_memory(daemon, device)


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(r)
