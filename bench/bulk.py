"""Bulk data: `torch load` of a 100 MB .npy (`torch value` of big tensors: bench/value.py), and what a
1 GiB upload costs the connections around it.

References: numpy's own np.load of the same file (read + parse), in this process; the same keep-alive
`add` with no upload going on.
"""
import io
import json
import os
import socket
import tempfile
import threading
import time

import numpy as np

from bench.common import CLIENT, interleaved, percentile, row, spawn_ms, summary, value_row

LOAD_TARGET_MBS = 500.0


def _timed(fn):
    t0 = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t0) / 1e6


def load_npy(daemon, quick=False):
    folder = tempfile.mkdtemp(prefix="tshl-")
    path = os.path.join(folder, "x.npy")
    np.save(path, np.random.default_rng(0).standard_normal(25_000_000, dtype=np.float32))  # 100 MB
    size_mb = os.path.getsize(path) / 1e6
    out = os.path.join(folder, "handle")

    def load():
        ms = spawn_ms([CLIENT, "load", path], daemon.env, stdout=out)
        daemon.cli("free", open(out).read().strip())
        return ms
    try:
        subj, ref, noise = interleaved(load, lambda: _timed(lambda: np.load(path)), rounds=3, per_round=1 if quick else 2)
    finally:
        os.unlink(path)
    med, _ = summary(subj)
    ref_med, _ = summary(ref)
    mbs = size_mb / (med / 1000)
    r = value_row("bulk: `torch load` 100 MB .npy (spawn->handle)", mbs, "MB/s", "in-process np.load, same file",
                  size_mb / (ref_med / 1000), target=">= %g MB/s" % LOAD_TARGET_MBS, met=mbs >= LOAD_TARGET_MBS,
                  noise=noise, note="median %.0f ms" % med)
    return [r]


def _upload(path, size, done):
    """POST /v1/tensors of a float32 .npy of `size` bytes (zeros), sent in 1 MiB pieces; its seconds in done."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": ((size - 128) // 4,)})  # a 128-byte header
    piece = bytes(1 << 20)
    t0 = time.perf_counter()
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        s.sendall(b"POST /v1/tensors HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (size, header.getvalue()))
        for at in range(128, size, len(piece)):
            s.sendall(piece[:size - at])
        reply = s.recv(65536)
    done.append((time.perf_counter() - t0, json.loads(reply.partition(b"\r\n\r\n")[2])["result"]))


def _keepalive_adds(path, a, until):
    """Latencies (ms) of a JSON `add` on one kept-alive connection, every 10 ms until until() is true."""
    body = json.dumps({"tensors": [a, a]}).encode()
    req = b"POST /v1/ops/add HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    out = []
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        while not until():
            t0 = time.perf_counter_ns()
            s.sendall(req)
            reply = s.recv(65536)
            while not reply.endswith(b"}"):
                reply += s.recv(65536)
            out.append((time.perf_counter_ns() - t0) / 1e6)
            time.sleep(0.01)
    return out


def beside_upload(daemon, quick=False):
    """A keep-alive `add` on another connection while a 1 GiB .npy upload arrives (before daemon/bodies.py read
    big bodies a slice per loop turn and stopped copying them whole, the worst wait was 5.8-11 s)."""
    size = (256 if quick else 1024) << 20
    a = daemon.cli("randn", "[3]")
    idle = _keepalive_adds(daemon.socket, a, lambda t=time.monotonic() + 1: time.monotonic() > t)
    done = []
    upload = threading.Thread(target=_upload, args=(daemon.socket, size, done))
    upload.start()
    during = _keepalive_adds(daemon.socket, a, lambda: not upload.is_alive())
    upload.join()
    seconds, handle = done[0]
    daemon.cli("free", handle)
    worst = max(during)
    return [row("bulk: keep-alive `add` beside a %d MiB .npy upload" % (size >> 20), during, "no upload", idle,
                target="worst <= 100 ms", met=worst <= 100.0,
                note="worst %.0f ms, p99 %.0f ms; the upload took %.1f s" % (worst, percentile(during, 0.99), seconds))]


def run(daemon, quick=False):
    return load_npy(daemon, quick) + beside_upload(daemon, quick)


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(r)
