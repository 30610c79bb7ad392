"""Profile the daemon's per-request path in-process (no sockets): HTTP parse, route, bind, invoke, render.

    .venv/bin/python -m bench.profile_api [N]      # cProfile of N POST /v1/ops/add requests: top 25 by
                                                   # own time, then torchsh's 25 by cumulative time

What the keep-alive API bench (bench/api.py) measures minus the socket round trip; use it to see
where the per-request microseconds go before and after a change.
"""
import cProfile
import json
import pstats
import sys
import tempfile
import time

from torchsh.daemon import http
from torchsh.daemon.app import App
from torchsh.daemon.routes import dispatch


def requests(app, n):
    ctx_put = app.registry.put
    import torch
    a, b = ctx_put(torch.randn(3), "tensor", None), ctx_put(torch.randn(3), "tensor", None)
    body = json.dumps({"tensors": [a, b]}).encode()
    raw = b"POST /v1/ops/add HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    def one():
        request, _ = http.parse_request(bytearray(raw), 1 << 30)
        response = dispatch(app, request)
        response.to_bytes(True)
    return one


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    app = App(tempfile.mktemp(suffix=".sock"), None)
    one = requests(app, n)
    for _ in range(500):
        one()
    batches = []
    for _ in range(20):  # the best batch: the least disturbed by other work on a shared machine
        t0 = time.perf_counter()
        for _ in range(n // 20):
            one()
        batches.append((time.perf_counter() - t0) / (n // 20) * 1e6)
    print("in-process request path: best batch %.1f us, median batch %.1f us per request"
          % (min(batches), sorted(batches)[len(batches) // 2]))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        one()
    prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(25)
    # where the time goes by stage: torchsh's own functions by time including their callees
    # (parse_request, dispatch -> post_op -> loads, bind, invoke, render)
    stats.sort_stats("cumtime").print_stats("torchsh", 25)


if __name__ == "__main__":
    main()
