"""Profile the daemon's per-request path in-process (no sockets): HTTP parse, route, bind, invoke, render.

    .venv/bin/python -m bench.profile_api [N]      # cProfile of N POST /v1/ops/add requests: top 25 by
                                                   # own time, then torchsh's 25 by cumulative time
    .venv/bin/python -m bench.profile_api train [N]  # the same for POST /v1/ops/train_step on the tiny
                                                   # model, beside the in-process step (the ratio), and
                                                   # what alternating the two costs (interleaving below)

What the keep-alive API bench (bench/api.py) measures minus the socket round trip; use it to see
where the per-request microseconds go before and after a change.
"""
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench.training as a script

from torchsh.daemon.app import App
from torchsh.daemon.routes import dispatch
from torchsh.wire import http


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


def train_requests(app):
    """POST /v1/ops/train_step on bench/training.py's tiny model, and that step in-process (no daemon)."""
    import torch
    import torch.nn.functional as F
    from bench.training import _reference_model
    model, opt, x, y, _ = _reference_model("tiny")
    put = app.registry.put
    m, o = put(model, "nn", None), put(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), "optim", None)
    body = json.dumps({"args": [m, o, put(x, "tensor", None), put(y, "tensor", None)]}).encode()
    raw = b"POST /v1/ops/train_step HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    def one():
        request, _ = http.parse_request(bytearray(raw), 1 << 30)
        response = dispatch(app, request)
        assert response.status == 200, response.body
        response.to_bytes(True)

    def reference():
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return one, reference


def batches_us(fn, n):
    """Per-call µs of 20 batches of n // 20 calls."""
    out = []
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(n // 20):
            fn()
        out.append((time.perf_counter() - t0) / (n // 20) * 1e6)
    return out


def interleaving(app, one, reference, n):
    """What the request's own code costs the step around it: the same request with the verb replaced by a
    no-op, the reference step, and the two alternated. On a 2-core EPYC VM the alternated pair cost ~30 µs
    more than the two apart (the step ~15 µs slower, the no-op request ~15 µs), while 15 µs of plain
    dict work alternated with the step cost ~4 µs more: the request path's code, not its amount of work,
    crowds the step's caches. This is why a daemon's step stays well above its in-process loop."""
    from torchsh.results import JsonText
    op, _ = app.table.lookup("train_step")
    verb = op.call

    def noop_request():
        op.call = lambda ctx, **values: JsonText("0")
        try:
            one()
        finally:
            op.call = verb

    def both():
        noop_request()
        reference()
    step, request, pair = (min(batches_us(f, n // 3)) for f in (reference, noop_request, both))
    print("interleaving: step alone %.1f us, no-op train_step request alone %.1f us, the two alternated %.1f us "
          "(+%.1f us over the sum)" % (step, request, pair, pair - step - request))


def main():
    train = sys.argv[1:2] == ["train"]
    args = sys.argv[2:] if train else sys.argv[1:]
    n = int(args[0]) if args else (4000 if train else 20000)
    app = App(tempfile.mktemp(suffix=".sock"), None)
    if train:
        one, reference = train_requests(app)
        for _ in range(200):
            one(), reference()
        subject, ref = [], []
        for _ in range(3):  # alternating, so a slow spell of the shared machine hits both
            subject += batches_us(one, n // 3)
            ref += batches_us(reference, n // 3)
        s, r = min(subject), min(ref)
        print("train_step in-process request path: best batch %.1f us; the step itself in-process %.1f us; "
              "ratio %.2fx" % (s, r, s / r))
        interleaving(app, one, reference, n)
    else:
        one = requests(app, n)
        for _ in range(500):
            one()
        batches = batches_us(one, n)  # the best batch: the least disturbed by other work on a shared machine
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
