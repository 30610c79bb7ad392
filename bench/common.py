"""Shared bench helpers: a private daemon, interleaved timing, rows.

Every figure is measured next to its reference in the same run, interleaved sample by sample, so
a slow spell of the machine hits both; the spread of the reference's per-round medians says how
noisy the machine was while the row ran.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
PYTHON = sys.executable
CLIENT = os.path.join(BIN, "torch")


# The floor of any Python HTTP server on a Unix socket: read whole keep-alive requests and send answer()
# for each, nothing else. SETUP (Python source) defines answer() -> the reply's bytes; argv[1] is the socket.
FLOOR_SERVER = r'''
import socket, sys
sys.path.insert(0, %r)
%s
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1])
srv.listen(1)
print("ready", flush=True)
c, _ = srv.accept()
buf = b""
while True:
    d = c.recv(65536)
    if not d:
        break
    buf += d
    while b"\r\n\r\n" in buf:
        head, _, rest = buf.partition(b"\r\n\r\n")
        n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        if len(rest) < n:
            break
        buf = rest[n:]
        c.sendall(answer())
'''


def floor_server(path, setup):
    """FLOOR_SERVER with `setup` in a process of its own, serving `path` once it prints ready."""
    server = subprocess.Popen([sys.executable, "-c", FLOOR_SERVER % (ROOT, setup), path], stdout=subprocess.PIPE,
                              text=True)
    server.stdout.readline()
    return server
NOISY = 0.20  # reference's per-round medians spread over more than 20% of their median: say so


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def summary(samples):
    return statistics.median(samples), percentile(samples, 0.9)


def spread(round_medians):
    """(max - min) / median of the per-round medians: 0 on a quiet machine."""
    if len(round_medians) < 2:
        return 0.0
    return (max(round_medians) - min(round_medians)) / statistics.median(round_medians)


def interleaved(subject, reference, rounds, per_round):
    """Call subject() and reference() alternately; each returns milliseconds. -> (subj, ref, spread)."""
    subj, ref, ref_rounds = [], [], []
    for _ in range(rounds):
        r = []
        for _ in range(per_round):
            subj.append(subject())
            r.append(reference())
        ref += r
        ref_rounds.append(statistics.median(r))
    return subj, ref, spread(ref_rounds)


def row(name, samples, ref_name, ref_samples, target=None, met=None, noise=None, note=""):
    """A time row: medians and p90s in ms, ratio subject/reference."""
    med, p90 = summary(samples)
    ref_med, ref_p90 = summary(ref_samples) if ref_samples else (None, None)
    return {"name": name, "median_ms": med, "p90_ms": p90, "reference": ref_name, "ref_median_ms": ref_med,
            "ref_p90_ms": ref_p90, "ratio": (med / ref_med) if ref_med else None, "n": len(samples),
            "target": target, "met": met, "noise": noise, "note": note}


def value_row(name, value, unit, ref_name, ref_value, target=None, met=None, noise=None, note="", ratio=None):
    """A non-time row (MB/s, MB): value and reference in the same unit."""
    return {"name": name, "value": value, "unit": unit, "reference": ref_name, "ref_value": ref_value,
            "ratio": ratio if ratio is not None else (value / ref_value if ref_value else None),
            "target": target, "met": met, "noise": noise, "note": note}


def spawn_ms(argv, env=None, stdout="/dev/null"):
    """Wall time of one process start -> exit, stdin and stdout on /dev/null, in ms."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env if env is not None else os.environ, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    ms = (time.perf_counter_ns() - t0) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s exited %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    return ms


class Daemon:
    """A private torchd on a socket in a temp folder; TORCHSH_* of this process point at it."""

    def __init__(self, device=None, parent=None):
        self.folder = tempfile.mkdtemp(prefix="tshb-", dir=parent)  # parent: default the temp folder
        self.socket = os.path.join(self.folder, "torchd.sock")
        # BASH_FUNC_…: the fast-path function a `torch init bash` shell exports; each row picks its path
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHSH_", "BASH_FUNC_", "__torchsh_"))}
        self.env.update(TORCHSH_SOCKET=self.socket, TORCHSH_TTL="30m", PATH=BIN + os.pathsep + os.environ["PATH"])
        if device:
            self.env["TORCHSH_DEVICE"] = device

    def __enter__(self):
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("TORCHSH_")})
        self.cli("daemon", "start")
        return self

    def __exit__(self, *exc):
        subprocess.run([CLIENT, "daemon", "stop"], env=self.env, capture_output=True)
        deadline = time.time() + 20
        while os.path.exists(self.socket) and time.time() < deadline:
            time.sleep(0.05)

    def cli(self, *argv, stdin=None):
        p = subprocess.run([CLIENT] + list(argv), env=self.env, input=stdin, capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError("torch %s: %s" % (" ".join(argv), p.stderr.strip()))
        return p.stdout.strip()

    def status(self):
        return json.loads(self.cli("daemon", "status", "--json"))
