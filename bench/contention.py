"""Latency under contention: 8 shells running `torch add` while one long op holds the tensor lock.

Tensor work is serialized (PyTorch's RNG, grad mode and allocator state are process-wide), so a
`torch add` that arrives while a 3 s op runs waits for it: its p99 is about the long op's length, by
design. What must not wait is everything that never takes the tensor lock: `torch daemon status`
(and the census, `free`, `daemon stop`) is timed under the same load. The reference is the same 8
shells with no long op. The long op is `torch matrix_power` of a 2000x2000 matrix to 2**24-1.
"""
import subprocess
import threading
import time

from bench.common import CLIENT, percentile, row, spawn_ms, value_row

SHELLS = 8


def _shells(daemon, argv, until):
    """SHELLS threads each running `torch ARGV` in a loop until until() is true; latencies in ms."""
    out, lock = [], threading.Lock()

    def loop():
        while not until():
            ms = spawn_ms([CLIENT] + argv, daemon.env)
            with lock:
                out.append(ms)
    threads = [threading.Thread(target=loop) for _ in range(SHELLS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _during_long_op(daemon, m, argv):
    long = subprocess.Popen([CLIENT, "matrix_power", m, "16777215"], env=daemon.env, stdout=subprocess.DEVNULL)
    t0 = time.monotonic()
    while not (daemon.status().get("busy") or {}).get("op") and time.monotonic() - t0 < 10:
        time.sleep(0.01)
    samples = _shells(daemon, argv, lambda: long.poll() is not None)
    long.wait()
    return samples


def _idle_connections(daemon, n):
    """n connections to the daemon's socket that never send a byte (each holds a descriptor there)."""
    import socket
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(daemon.socket)
        out.append(s)
    return out


def idle_rows(daemon, quick=False):
    """`torch add` while 500 connections sit idle on the socket, against the same command without them."""
    a = daemon.cli("randn", "[3]")
    add = [CLIENT, "add", a, a]
    rounds = 3 if quick else 10
    idle = _idle_connections(daemon, IDLE)
    try:
        with_idle = [spawn_ms(add, daemon.env) for _ in range(rounds * 5)]
    finally:
        for s in idle:
            s.close()
    time.sleep(0.5)
    without = [spawn_ms(add, daemon.env) for _ in range(rounds * 5)]
    return [row("`torch add` with %d idle connections open" % IDLE, with_idle, "no idle connections", without,
                target="p99 <= 100 ms", met=percentile(with_idle, 0.99) <= 100.0,
                note="p99 %.1f ms" % percentile(with_idle, 0.99))]


IDLE = 500


def run(daemon, quick=False):
    a, b = daemon.cli("randn", "[3]"), daemon.cli("randn", "[3]")
    m = daemon.cli("randn", "[2000,2000]")
    add = ["add", a, b]
    rounds = 1 if quick else 3
    loaded, status_loaded, quiet, status_quiet = [], [], [], []
    for _ in range(rounds):
        loaded += _during_long_op(daemon, m, add)
        status_loaded += _during_long_op(daemon, m, ["daemon", "status"])
        end = time.monotonic() + 3.0
        quiet += _shells(daemon, add, lambda: time.monotonic() > end)
        end = time.monotonic() + 1.0
        status_quiet += _shells(daemon, ["daemon", "status"], lambda: time.monotonic() > end)
        daemon.cli("free", "--all")
        a, b = daemon.cli("randn", "[3]"), daemon.cli("randn", "[3]")
        m = daemon.cli("randn", "[2000,2000]")
        add = ["add", a, b]
    p99 = percentile(loaded, 0.99)
    rows = [
        value_row("contention: p99 of 8 shells' `torch add` while a ~3 s op runs", p99, "ms",
                  "same shells, no long op (p99)", percentile(quiet, 0.99),
                  note="waits for the tensor lock by design: about the long op's length; n=%d" % len(loaded)),
        row("contention: 8 shells' `torch add` while a ~3 s op runs", loaded, "same shells, no long op", quiet),
        value_row("contention: p99 of 8 shells' `torch daemon status` while a ~3 s op runs",
                  percentile(status_loaded, 0.99), "ms", "same shells, no long op (p99)",
                  percentile(status_quiet, 0.99), target="<= 3x the reference",
                  note="lock-free: never waits for the tensor lock; n=%d" % len(status_loaded)),
    ]
    rows[2]["met"] = rows[2]["ratio"] is not None and rows[2]["ratio"] <= 3.0
    return rows + idle_rows(daemon, quick)


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(r)
