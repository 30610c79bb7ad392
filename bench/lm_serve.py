"""`torch serve LM --openai` (issue 38): chat completions per second of a tiny Llama served with batching, for
CLIENTS concurrent clients against one client at a time, on the same server in the same run.

Model: `python -m torchsh.lm.tiny DIR --layers 4 --hidden 256` (a random Llama, ~3.4M parameters, its own
byte-level BPE), on CPU. Load: each client is a thread of this process with its own kept-alive connection to
the daemon's Unix socket, sending non-streamed POST /v1/chat/completions (greedy, max_tokens MAX_TOKENS, a
prompt of its own) back to back for SECONDS; requests/s = answered / SECONDS, tokens/s = the answers'
usage.completion_tokens / SECONDS. The reference is one client (one request at a time); target: CLIENTS
clients answered at >= 3x its requests/s. throughput() is the measure, reusable (tests call nothing here).

The server runs the model on one intra-op thread (--threads 1), as bench/serve.py does and for its reason: on
this two-core machine, shared, two OpenMP threads spin against the clients and each other (a 32-row decode
step measured 12-21 ms on one thread, 94-188 ms on two; one row 9 ms against 24-28 ms).

    .venv/bin/python bench/lm_serve.py [--quick]
"""
import http.client
import json
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import Daemon, percentile, value_row  # noqa: E402

CLIENTS = 32
MAX_TOKENS = 32
SECONDS = 10.0
TARGET = 3.0


class UnixHTTP(http.client.HTTPConnection):
    """http.client over the daemon's Unix socket (one kept-alive connection)."""

    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def chat(conn, name, prompt, max_tokens=MAX_TOKENS):
    """One non-streamed chat completion on CONN: its reply's JSON."""
    body = json.dumps({"model": name, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                       "temperature": 0})
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    reply = conn.getresponse()
    data = reply.read()
    if reply.status != 200:
        raise RuntimeError("HTTP %d: %s" % (reply.status, data[:300]))
    return json.loads(data)


def throughput(socket_path, name, clients, seconds, max_tokens=MAX_TOKENS):
    """CLIENTS threads sending chat completions back to back for SECONDS -> {requests, tokens, rps, tps, p50_ms,
    p99_ms}: what was answered within the window (a request still out at its end is not counted)."""
    stop_at = time.perf_counter() + seconds
    done, latencies, errors, lock = [0], [], [], threading.Lock()

    def client(k):
        conn, tokens = UnixHTTP(socket_path), 0
        try:
            while time.perf_counter() < stop_at:
                t0 = time.perf_counter()
                reply = chat(conn, name, "hello %d, why is the sky blue?" % k, max_tokens)
                t1 = time.perf_counter()
                if t1 > stop_at:
                    break
                with lock:
                    done[0] += 1
                    latencies.append(t1 - t0)
                tokens += reply["usage"]["completion_tokens"]
        except Exception as e:  # a refused or broken request: reported, not hidden in a lower rate
            errors.append(repr(e))
        finally:
            conn.close()
        with lock:
            counted.append(tokens)
    counted = []
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("%d clients failed: %s" % (len(errors), errors[0]))
    latencies.sort()
    return {"requests": done[0], "tokens": sum(counted), "rps": done[0] / seconds, "tps": sum(counted) / seconds,
            "p50_ms": 1000 * percentile(latencies, 0.5) if latencies else None,
            "p99_ms": 1000 * percentile(latencies, 0.99) if latencies else None}


def serve_tiny(daemon, folder, name="tiny", max_batch=CLIENTS):
    """Open FOLDER and serve it OpenAI-style as NAME (detached) -> the serve job's handle."""
    lm = daemon.cli("lm", "open", folder)
    return daemon.cli("serve", lm, "--openai", "--name", name, "--max_batch", str(max_batch), "--threads", "1",
                      "--detach")


def run(quick=False):
    from torchsh.lm import tiny
    seconds = 4.0 if quick else SECONDS
    with tempfile.TemporaryDirectory(prefix="tsh-lmserve-") as tmp, Daemon() as daemon:
        folder = tiny.make(os.path.join(tmp, "tiny"), layers=4, hidden=256)
        job = serve_tiny(daemon, folder)
        try:
            throughput(daemon.socket, "tiny", 1, 1.0)  # warm: the first forward's one-time costs
            alone = throughput(daemon.socket, "tiny", 1, seconds)
            together = throughput(daemon.socket, "tiny", CLIENTS, seconds)
        finally:
            daemon.cli("job", "stop", job)
    return rows(alone, together)


def rows(alone, together):
    note = "tiny Llama 4 layers, hidden 256, CPU; greedy, max_tokens %d; one client: %.1f req/s, %.0f tokens/s, " \
           "p50 %.0f ms; %d clients: %.0f tokens/s, p50 %.0f ms" % (
               MAX_TOKENS, alone["rps"], alone["tps"], alone["p50_ms"] or 0, CLIENTS, together["tps"],
               together["p50_ms"] or 0)
    ratio = together["rps"] / alone["rps"] if alone["rps"] else None
    return [value_row("torch serve --openai, %d concurrent chat clients: requests/s" % CLIENTS, together["rps"], "rps",
                      "one client at a time", alone["rps"], target=">= %gx" % TARGET,
                      met=ratio is not None and ratio >= TARGET, note=note)]


def main(argv=None):
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    for row in run(quick):
        print("%s: %.2f %s against %.2f (%s): %.2fx (target %s) — %s" % (
            row["name"], row["value"], row["unit"], row["ref_value"], row["reference"], row["ratio"] or 0,
            row["target"], row["note"]))


if __name__ == "__main__":
    main()
