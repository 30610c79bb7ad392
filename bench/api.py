"""Daemon overhead per small op through the JSON API on one kept-alive Unix-socket connection.

10,000 `POST /v1/ops/add` requests (two 3-element tensors), timed in batches; the in-process
`torch.add` on the same tensors is the reference. Overhead = per request minus the in-process op;
it includes this bench's own socket calls (the floor of any client).
"""
import json
import os
import socket
import time

import torch

from bench.common import floor_server, row, spread, summary

TARGET_US = 60.0


class Conn:
    """A minimal keep-alive HTTP/1.1 client over the daemon's Unix socket."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def post(self, target, body):
        self.sock.sendall(b"POST %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (target, len(body), body))
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(rest) < length:
            rest += self.sock.recv(65536)
        self.buf = rest[length:]
        return head, rest[:length]


# The floor of any Python HTTP server: a minimal keep-alive echo of a fixed reply, in its own process.
_ECHO = """
REPLY = b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: 30\\r\\n\\r\\n" + b'{"result":"tensor://abc00001"}'
answer = lambda: REPLY  # noqa: E731
"""


def _echo_floor(folder, body, batch, batches):
    path = os.path.join(folder, "echo.sock")
    server = floor_server(path, _ECHO)
    try:
        conn = Conn(path)
        out = []
        for _ in range(batches):
            t0 = time.perf_counter_ns()
            for _ in range(batch):
                conn.post(b"/v1/ops/add", body)
            out.append((time.perf_counter_ns() - t0) / batch / 1e6)
        conn.sock.close()
        return out
    finally:
        server.kill()
        server.wait()


def run(daemon, quick=False, device=None):
    conn = Conn(daemon.socket)
    a = daemon.cli("randn", "[3]")
    b = daemon.cli("randn", "[3]")
    body = json.dumps({"tensors": [a, b]}).encode()
    head, reply = conn.post(b"/v1/ops/add", body)
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise RuntimeError("POST /v1/ops/add: %s" % reply[:200])
    x, y = torch.randn(3, device=device), torch.randn(3, device=device)
    total, batch = (2000, 200) if quick else (10000, 500)
    per_req, per_op, op_rounds = [], [], []
    for _ in range(total // batch):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            conn.post(b"/v1/ops/add", body)
        per_req.append((time.perf_counter_ns() - t0) / batch / 1e6)
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            torch.add(x, y)
        if device and device.startswith("cuda"):
            torch.cuda.synchronize()
        per_op.append((time.perf_counter_ns() - t0) / batch / 1e6)
        op_rounds.append(per_op[-1])
        daemon.cli("free", "--all")  # 500 results per batch: keep the registry small
        a, b = daemon.cli("randn", "[3]"), daemon.cli("randn", "[3]")
        body = json.dumps({"tensors": [a, b]}).encode()
    conn.sock.close()
    floor = _echo_floor(daemon.folder, body, batch, total // batch)
    req_med, _ = summary(per_req)
    op_med, _ = summary(per_op)
    overhead = [r - op_med for r in per_req]
    r1 = row("API: POST /v1/ops/add, keep-alive (%d requests)" % total, per_req, "in-process torch.add",
             per_op, noise=spread(op_rounds), note="per request, median of %d-request batches" % batch)
    r2 = row("API: daemon overhead per small op (request - in-process op)", overhead, "in-process torch.add",
             per_op, target="<= %g us" % TARGET_US, noise=spread(op_rounds))
    r2["met"] = r2["median_ms"] * 1000 <= TARGET_US
    r3 = row("API: same requests to a minimal Python echo server (the floor)", floor, "in-process torch.add",
             per_op, noise=spread(op_rounds), note="socket round trip + HTTP framing, no work")
    return [r1, r2, r3]


if __name__ == "__main__":
    from bench.common import Daemon
    with Daemon() as d:
        for r in run(d, quick=True):
            print(r)
