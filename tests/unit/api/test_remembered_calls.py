"""api/calls.py remembers, per op and shape of a JSON body's words, the slot each word fills; a call of a
remembered shape must do exactly what the full path (tokens, overload choice, stdin rule) does with the same
body: for every op of the parity samples, with other tensors of the same shapes, in-process through the
daemon's own routes; and a plan must never serve words of another shape."""
import json
import os
import sys
import tempfile

import pytest
import torch

from torchsh.api import calls
from torchsh.daemon.app import App
from torchsh.daemon.routes import dispatch
from torchsh.wire import http

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "call"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "parity"))
import parity_runner  # noqa: E402
from test_bind_cache import cases  # noqa: E402  (op, sample) for every op with a parity sample


@pytest.fixture(scope="module")
def app():
    return App(tempfile.mktemp(suffix=".sock"), None)


def post(app, name, body):
    data = json.dumps(body).encode()
    raw = b"POST /v1/ops/%s HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (name.encode(), len(data), data)
    request, _ = http.parse_request(bytearray(raw), 1 << 30)
    torch.manual_seed(0)  # random ops: both calls compared draw the same numbers
    response = dispatch(app, request)
    return response.status, json.loads(response.body)


def body_of(app, sample, tensors):
    """The JSON body of a parity sample, each of its tensors replaced by a handle of `tensors`' next one."""
    queue = list(tensors)

    def word(v):
        if isinstance(v, torch.Tensor):
            return app.registry.put(queue.pop(0), "tensor", None)
        if isinstance(v, (list, tuple)):
            return [word(x) for x in v]
        if isinstance(v, torch.dtype):
            return str(v).replace("torch.", "")
        return v if isinstance(v, (int, float, str, bool, type(None))) else str(v)
    return {"args": [word(v) for v in sample.args], "kwargs": {k: word(v) for k, v in sample.kwargs.items()}}


def sample_tensors(sample):
    return [t for v in list(sample.args) + list(sample.kwargs.values())
            for t in (v if isinstance(v, (list, tuple)) else [v]) if isinstance(t, torch.Tensor)]


def others_like(tensors):
    """Tensors of the same shapes and dtypes with other values (so a word put in the wrong slot shows)."""
    g = torch.Generator().manual_seed(1)
    out = []
    for t in tensors:
        if t.dtype.is_floating_point or t.dtype.is_complex:
            out.append(torch.randn(t.shape, dtype=t.dtype, generator=g))
        elif t.dtype == torch.bool:
            out.append(torch.randint(0, 2, t.shape, generator=g).bool())
        else:
            out.append(t.flip(-1) if t.dim() else t.clone())  # indices stay in range
    return out


def resolved(app, value):
    """A reply's result with every handle replaced by what it holds."""
    if isinstance(value, str) and value.startswith("tensor://"):
        return app.registry.get(value)
    if isinstance(value, list):
        return [resolved(app, v) for v in value]
    if isinstance(value, dict):
        return {k: resolved(app, v) for k, v in value.items()}
    return value


def _same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return parity_runner.same(a, b)


def test_a_remembered_call_does_what_the_full_path_does_for_every_parity_sample(app):
    compared = planned = 0
    for op, sample in cases():
        calls._PLANS.clear()
        ins = sample_tensors(sample)
        post(app, op.name, body_of(app, sample, ins))  # the full path; leaves the plan when the shape has one
        if not calls._PLANS:
            continue
        planned += 1
        second = others_like(ins)
        fresh = [t.clone() for t in second]  # in-place ops change their inputs: the full path gets its own copy
        got = post(app, op.name, body_of(app, sample, second))
        calls._PLANS.clear()
        want = post(app, op.name, body_of(app, sample, fresh))
        assert got[0] == want[0], (op.name, got, want)
        if got[0] == 200:
            assert _same(resolved(app, got[1]["result"]), resolved(app, want[1]["result"])), op.name
        else:
            assert got[1] == want[1], op.name
        compared += 1
    assert planned > 300 and compared == planned, (planned, compared)


@pytest.mark.parametrize("name,first,second", [
    ("add", {"args": ["A", "B"]}, {"args": ["A", 2]}),                     # add.Tensor, then add.Scalar
    ("std", {"args": ["A", 1]}, {"args": ["A", 0]}),                       # 1 and 0 may be bools: same shape
    ("sum", {"args": ["A", 0]}, {"args": ["A"], "kwargs": {"dtype": "float64"}}),  # sum(dim), then sum(dtype)
    ("sub", {"args": ["A", "B"]}, {"args": ["A", "B"], "kwargs": {"alpha": 2}}),  # a flag more
    ("mul", {"tensors": ["A", "B"]}, {"args": ["A"], "tensors": ["B"]}),   # a word moves from tensors to args
])
def test_a_remembered_plan_never_serves_words_of_another_shape(app, name, first, second):
    a, b = torch.randn(4), torch.randn(4)

    def body(template):
        names = {"A": app.registry.put(a, "tensor", None), "B": app.registry.put(b, "tensor", None)}
        return {k: [names.get(w, w) if isinstance(w, str) else w for w in v] if isinstance(v, list) else v
                for k, v in template.items()}
    calls._PLANS.clear()
    replies = [post(app, name, body(t)) for t in (first, second, first, second)]
    calls._PLANS.clear()
    full = [post(app, name, body(t)) for t in (first, second)]
    for got, want in zip(replies, full + full):
        assert got[0] == want[0] == 200
        assert torch.equal(resolved(app, got[1]["result"]), resolved(app, want[1]["result"]))


def test_a_freed_handle_on_a_remembered_call_fails_as_on_the_full_path(app):
    calls._PLANS.clear()
    x = app.registry.put(torch.ones(2), "tensor", None)
    assert post(app, "neg", {"tensors": [x]})[0] == 200
    gone = app.registry.put(torch.ones(2), "tensor", None)
    app.registry.free([gone])
    planned = post(app, "neg", {"tensors": [gone]})
    calls._PLANS.clear()
    assert planned == post(app, "neg", {"tensors": [gone]}) and planned[0] == 404


def test_an_aliases_fixed_flag_is_kept_and_a_given_one_wins(app):
    """`svd` is linalg.svd with full_matrices=False fixed by its name; a kwarg given overrides it."""
    m = torch.randn(3, 2)
    calls._PLANS.clear()
    for kwargs, rows in (({}, 2), ({}, 2), ({"full_matrices": True}, 3), ({"full_matrices": True}, 3), ({}, 2)):
        status, reply = post(app, "svd", {"args": [app.registry.put(m, "tensor", None)], "kwargs": kwargs})
        assert status == 200
        u = resolved(app, reply["result"])["U"]
        assert u.shape == (3, rows) and torch.allclose(u, torch.linalg.svd(m, full_matrices=rows == 3)[0])


@pytest.mark.parametrize("order", ["m x x y", "m o m y"])
def test_a_handle_of_another_kind_on_a_remembered_call_fails_as_on_the_full_path(app, order):
    """train_step's handle slots are looked up straight from a remembered plan: a tensor where the
    optimizer goes, a module where the input goes, must answer what the full path answers."""
    model = torch.nn.Linear(1, 1)
    put = app.registry.put
    held = {"m": put(model, "nn", None), "o": put(torch.optim.SGD(model.parameters(), lr=0.1), "optim", None),
            "x": put(torch.ones(4, 1), "tensor", None), "y": put(torch.ones(4, 1), "tensor", None)}
    calls._PLANS.clear()
    assert post(app, "train_step", {"args": [held[w] for w in "m o x y".split()]})[0] == 200
    words = [held[w] for w in order.split()]
    post(app, "train_step", {"args": words})  # the full path, which leaves the plan of this shape
    assert calls.key("train_step", words, [], {}, app.registry.kind_of) in calls._PLANS
    planned = post(app, "train_step", {"args": words})
    calls._PLANS.clear()
    assert planned == post(app, "train_step", {"args": words})
    assert planned[0] == 409 and planned[1]["error"]["code"] == "wrong_kind"
