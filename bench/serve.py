"""`torch serve` (issue 27 §2): requests per second of a small CNN served with dynamic batching against the same
server unbatched, with JSON tensors and with the binary tensor data extension, and a `fit` beside a loaded
server, in the same run.

Model: Conv2d(1, 8, 3) -> ReLU -> MaxPool2d(2) -> Flatten -> Linear(1352, 10) on 1x28x28 FP32 inputs, on CPU.
Load: CLIENTS threads of this process, each with its own kept-alive connection to the daemon's Unix socket,
sending one-sample V2 infer requests back to back (a fixed number of concurrent clients, no fixed rate) for
SECONDS; requests per second = answered / SECONDS; p50 and p99 are the clients' round trips.

  (a) --max_batch 32 --max_wait_ms 5 against (b) --max_batch 1 (unbatched), JSON tensors; target (a) >= 3x (b)'s
      rps; (a') and (b') the same with binary tensors (request and reply), the same servers and clients;
  (e) (a)'s server on its --port (loopback: plain HTTP with the daemon's token in each head), JSON tensors, the same
      clients over TCP: `serve --port`'s door of the daemon's loop against (a) on the Unix socket;
  (c) `torch fit` of the same CNN (2,048 samples, batch 64, SGD, FIT_EPOCHS epochs) alone against (d) the same fit while (a)'s load
      runs at a fixed RATE (200 requests/s from the CLIENTS threads; unpaced clients on two cores would measure
      the clients' own CPU as much as the server): target (d) keeps >= 70% of (c)'s samples per second.

CLIENTS is 64, twice --max_batch: each client waits for its reply before it sends again, so with fewer
clients than --max_batch no batch ever fills and each waits out --max_wait_ms: 16 clients top out at
16 / 5 ms = 3,200 rps however fast the server (measured ~2,250, 1.2x unbatched). The unbatched server is
as fast at 16 clients as at 64 (~1,900 rps: it runs one request at a time either way), so the reference
is not slowed by the load. Both servers run the model on one intra-op thread (--threads 1): with the
default (one thread a core) on a two-core machine that also runs the clients, PyTorch's OpenMP threads
spin for the next parallel region on the core the daemon and clients need: unbatched requests then cost
1-8 ms of CPU each, not ~0.5, and its rps swung 125-2,100 from run to run (a ratio of 9x was one such
accident); a one-sample forward of this CNN took 33 µs on one thread and ~330 µs on two, on this busy machine.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import Daemon, percentile, spread, value_row  # noqa: E402

CNN = "sequential 'conv2d 1 8 3' relu 'max_pool2d 2' flatten 'linear 1352 10'"
CLIENTS, SAMPLES, BATCH = 64, 2048, 64
FIT_EPOCHS = 20  # ~2 s of fit: the window the server's load is measured in must hold many paced requests
TARGET_RPS, TARGET_FIT = 3.0, 0.7
SERVE_FLAGS = ("--threads", "1")  # both servers (see above)
RATE = 200  # requests per second in all while the fit runs beside the server (d)
BODY = json.dumps({"inputs": [{"name": "input__0", "shape": [1, 1, 28, 28], "datatype": "FP32",
                               "data": [0.5] * 784}]}).encode()
# the same request with the binary tensor data extension: the JSON header, then the input's 784 raw floats;
# the output asked for raw too
BINARY_HEADER = json.dumps({"inputs": [{"name": "input__0", "shape": [1, 1, 28, 28], "datatype": "FP32",
                                        "parameters": {"binary_data_size": 784 * 4}}],
                            "parameters": {"binary_data_output": True}}).encode()
BINARY_BODY = BINARY_HEADER + struct.pack("<784f", *[0.5] * 784)


def request_bytes(name, binary=False, token=None):
    """One infer request, made once: the clients send these bytes as they are (their own CPU stays small:
    the clients share the machine with the server). token: a --port's, in the Authorization header."""
    auth = b"Authorization: Bearer %s\r\n" % token if token else b""
    if binary:
        return (b"POST /v2/models/%s/infer HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n"
                b"%sInference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
                % (name.encode(), auth, len(BINARY_HEADER), len(BINARY_BODY))) + BINARY_BODY
    return (b"POST /v2/models/%s/infer HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"%sContent-Length: %d\r\n\r\n" % (name.encode(), auth, len(BODY))) + BODY


def port_of(daemon):
    """(port, token) of the batched server's --port (_setup), None when it serves on the Unix socket only."""
    port = getattr(daemon, "serve_port", None)
    if port is None:
        return None
    with open(os.path.join(os.path.dirname(daemon.socket), "torchd.serve.token"), "rb") as f:
        return port, f.read().strip()


def read_reply(sock, buf):
    """Read one reply off a kept-alive connection: its status; what follows it stays in buf."""
    while (end := buf.find(b"\r\n\r\n")) < 0:
        buf += sock.recv(65536)
    head = bytes(buf[:end]).decode("latin-1")
    length = int(head.lower().split("content-length:", 1)[1].split("\r\n", 1)[0])
    while len(buf) < end + 4 + length:
        buf += sock.recv(65536)
    del buf[:end + 4 + length]
    return int(head.split(" ", 2)[1])


def load(daemon, name, stop, latencies, every=0.0, binary=False, port=None):
    """One client: requests back to back (or one each `every` seconds) until stop is set; its round trips
    appended to latencies. port: (port, token) to send them to a --port on 127.0.0.1, not the Unix socket."""
    if port is None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(daemon.socket)
    else:
        sock = socket.create_connection(("127.0.0.1", port[0]))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    message, buf = request_bytes(name, binary, port and port[1]), bytearray()
    next_at = time.perf_counter()
    while not stop.is_set():
        if every:
            next_at += every
            time.sleep(max(0.0, next_at - time.perf_counter()))
        t0 = time.perf_counter()
        sock.sendall(message)
        status = read_reply(sock, buf)
        if status != 200:
            raise RuntimeError("infer answered %d" % status)
        latencies.append(time.perf_counter() - t0)
    sock.close()


def loaded(daemon, name, seconds, during=None, rate=None, binary=False, clients=None, port=None):
    """(requests per second, round trips) of CLIENTS clients for `seconds` (or while during() runs), back to
    back or, with a rate, RATE requests per second in all; on a --port (port, token) when given."""
    stop, latencies, clients = threading.Event(), [], clients or CLIENTS
    every = clients / rate if rate else 0.0
    threads = [threading.Thread(target=load, args=(daemon, name, stop, latencies, every, binary, port))
               for _ in range(clients)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    result = during() if during else time.sleep(seconds)
    elapsed = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join()
    return len(latencies) / elapsed, sorted(latencies), result


def fit_samples_per_s(daemon, loader):
    m = daemon.cli("nn", *_words(CNN))
    o = daemon.cli("optim", "sgd", m, "--lr", "0.01")
    t0 = time.perf_counter()
    daemon.cli("fit", m, o, loader, "--loss", "cross_entropy", "--epochs", str(FIT_EPOCHS))
    return FIT_EPOCHS * SAMPLES / (time.perf_counter() - t0)


def _words(text):
    import shlex
    return shlex.split(text)


def run(quick=False):
    """Rounds of (a) (b) (a') (b') (c) (d) back to back, each figure the median of its rounds (the machine's other
    load changes from minute to minute: interleaving meets it evenly)."""
    seconds, rounds = (2.0, 1) if quick else (4.0, 3)
    with Daemon() as daemon:
        jobs, loader = _setup(daemon)
        for name in ("cnn", "cnn1"):  # warm both servers, both forms, and the fit
            loaded(daemon, name, 0.5)
            loaded(daemon, name, 0.5, binary=True)
        loaded(daemon, "cnn", 0.5, port=port_of(daemon))
        fit_samples_per_s(daemon, loader)
        figures = [_round(daemon, loader, seconds) for _ in range(rounds)]
        for job in jobs:
            daemon.cli("job", "stop", job)
    med = {key: median([f[key] for f in figures]) for key in figures[0] if "lat" not in key}
    lat = {key: sorted(x for f in figures for x in f[key]) for key in figures[0] if "lat" in key}
    rows = [_rps_row("JSON tensors", med["json"], lat["json_lat"], med["json1"], lat["json1_lat"]),
            _rps_row("binary tensors", med["bin"], lat["bin_lat"], med["bin1"], lat["bin1_lat"]),
            _port_row(med["port"], lat["port_lat"], med["json"]),
            _fit_row(med["alone"], med["beside"], med["beside_rps"], lat["beside_lat"])]
    rows[0]["noise"] = spread([f["json1"] for f in figures])  # the references' spread over the rounds
    rows[1]["noise"] = spread([f["bin1"] for f in figures])
    rows[2]["noise"] = spread([f["json"] for f in figures])
    rows[3]["noise"] = spread([f["alone"] for f in figures])
    return rows


def _setup(daemon):
    """The two servers (batched, unbatched) and the fit's loader."""
    jobs = []
    daemon.serve_port = free_port()  # the batched server's --port too: (e)
    for name, max_batch, max_wait, port in (("cnn", "32", "5", ["--port", str(daemon.serve_port)]),
                                            ("cnn1", "1", "0", [])):
        m = daemon.cli("nn", *_words(CNN))
        jobs.append(daemon.cli("serve", m, "--name", name, "--max_batch", max_batch, "--max_wait_ms", max_wait,
                               *SERVE_FLAGS, *port, "--detach"))
    x = daemon.cli("randn", str(SAMPLES), "1", "28", "28")
    y = daemon.cli("randint", "10", "[%d]" % SAMPLES)
    loader = daemon.cli("data", "loader", daemon.cli("data", "tensors", x, y), "--batch_size", str(BATCH),
                        "--shuffle", "--seed", "0")
    return jobs, loader


def _round(daemon, loader, seconds):
    figures = {}
    for key, name, binary in (("json", "cnn", False), ("json1", "cnn1", False), ("bin", "cnn", True),
                              ("bin1", "cnn1", True)):
        figures[key], figures[key + "_lat"], _ = loaded(daemon, name, seconds, binary=binary)
    figures["port"], figures["port_lat"], _ = loaded(daemon, "cnn", seconds, port=port_of(daemon))
    figures["alone"] = fit_samples_per_s(daemon, loader)
    figures["beside_rps"], figures["beside_lat"], figures["beside"] = loaded(
        daemon, "cnn", None, lambda: fit_samples_per_s(daemon, loader), RATE)
    return figures


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def _ms(xs, q):
    return percentile(xs, q / 100) * 1000


def _rps_row(form, rps, lat, rps1, lat1):
    what = "CNN 1x28x28 (conv 8 3x3, pool, linear 10), %s, %d clients on the Unix socket" % (form, CLIENTS)
    note = "p50/p99 %.1f/%.1f ms batched, %.1f/%.1f ms unbatched" % (
        _ms(lat, 50), _ms(lat, 99), _ms(lat1, 50), _ms(lat1, 99))
    return value_row("torch serve --max_batch 32 --max_wait_ms 5 --threads 1, %s: requests/s" % what, rps, "rps",
                     "(b) the same server --max_batch 1", rps1, target=">= %gx" % TARGET_RPS,
                     met=rps / rps1 >= TARGET_RPS, note=note)


def _port_row(rps, lat, unix_rps):
    what = "CNN 1x28x28, JSON tensors, %d clients on 127.0.0.1 (plain HTTP, the token in each head)" % CLIENTS
    return value_row("torch serve --port, (a)'s server on its port, %s: requests/s" % what, rps, "rps",
                     "(a) the same server on the Unix socket", unix_rps,
                     note="p50/p99 %.1f/%.1f ms" % (_ms(lat, 50), _ms(lat, 99)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fit_row(alone, beside, beside_rps, beside_lat):
    return value_row("torch fit of the CNN beside a served CNN at %d requests/s: samples/s" % RATE, beside,
                     "samples/s", "(c) the same fit alone", alone, target=">= %g of alone" % TARGET_FIT,
                     met=beside / alone >= TARGET_FIT, note="the server meanwhile: %.0f rps, p50/p99 %.1f/%.1f ms" % (
                         beside_rps, _ms(beside_lat, 50), _ms(beside_lat, 99)))


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print("%-100s %8.1f %-9s ref %8.1f  ratio %.2fx  %s  %s" % (
            r["name"], r["value"], r["unit"], r["ref_value"], r["ratio"], r.get("target") or "", r["note"]))
