"""The V2 routes' handlers, the same for the daemon's Unix socket (rows of daemon/routes.py) and --port
(serve/tcp.py, a door of the same server loop): GET /v2, /v2/health/live|ready,
/v2/models/NAME[/versions/V][/ready], POST …/infer.

A handler never waits: an inference request is checked here (on a lock-free worker), queued on its model
(serve/batcher.py; the models by name are the app's: app.served, serve/repository.py) and answered as a Deferred reply, sent by the batch loop when its batch has run; no thread
waits for it meanwhile. Errors are V2's {"error": "…"} (and torchsh's stable code), with their HTTP status.
"""
import json

from torchsh.errors import TorchshError
from torchsh.serve import batcher, v2
from torchsh.wire.http import Deferred, Response

MAX_BODY = 64 << 20  # an inference request's body; more is refused (413) before it is parsed
EXTENSIONS = ("binary_tensor_data",)  # Triton's binary tensor data extension (serve/v2.py)
_MODEL = r"/v2/models/(?P<name>[\w.-]+)(?:/versions/(?P<version>[\w.-]+))?"


def v2_response(status, body, headers=None):
    """A V2 reply: a JSON body, or a v2.BinaryReply framed by the binary extension (its JSON header's length
    in Inference-Header-Content-Length, the raw tensors after it)."""
    if isinstance(body, v2.BinaryReply):
        header = json.dumps(body.header, separators=(",", ":"), allow_nan=True).encode()
        return Response(status, header + body.tail, "application/octet-stream",
                        dict(headers or {}, **{"Inference-Header-Content-Length": str(len(header))}))
    return Response(status, json.dumps(body, separators=(",", ":"), allow_nan=True).encode(),
                    headers=dict(headers or {}))


def _v2(handler):
    """A handler whose refusals are V2 errors (the router's own are torchsh's JSON errors)."""
    def answer(app, request, params):
        try:
            return handler(app, request, params)
        except TorchshError as e:
            return v2_response(*batcher.failure(e))
    answer.__name__, answer.__doc__ = handler.__name__, handler.__doc__
    return answer


@_v2
def get_server(app, request, params):
    """V2 server metadata: name, version, extensions."""
    return v2_response(200, {"name": "torchsh", "version": app.version, "extensions": list(EXTENSIONS)})


@_v2
def get_live(app, request, params):
    return v2_response(200, {"live": True})


@_v2
def get_ready(app, request, params):
    return v2_response(200, {"ready": True})


@_v2
def get_model(app, request, params):
    """V2 model metadata: its name, platform, and its tensors' datatypes and shapes (serve/shapes.py: -1 where a
    size varies; [-1] alone without --input_shape)."""
    served = app.served.get(params["name"], "v2")
    dtype = next((p.dtype for p in served.model.parameters()), None)
    inputs, outputs = served.shapes.metadata(batcher.DATATYPES.get(dtype, "FP32"))
    if served.classifies():  # the card's classes, by name, beside the model's own outputs
        outputs.append({"name": v2.PREDICTION, "datatype": "BYTES", "shape": [-1]})
    return v2_response(200, {"name": served.name, "versions": ["1"], "platform": "pytorch_torchsh",
                             "inputs": inputs, "outputs": outputs})


@_v2
def get_model_ready(app, request, params):
    """200 while the model takes requests; 503 once it is stopping."""
    served = app.served.get(params["name"], "v2")
    return v2_response(200 if served.open else 503, {"name": served.name, "ready": served.open})


@_v2
def post_infer(app, request, params):
    """Check and queue one inference request; its reply comes when its batch has run."""
    served = app.served.get(params["name"], "v2")
    if len(request.body) > MAX_BODY:
        raise TorchshError("too_large", "the request body is %d bytes, over %d" % (len(request.body), MAX_BODY),
                           "send fewer rows a request")
    try:
        parsed = v2.parse_infer(request.body, served.max_elements, request.headers.get(v2.HEADER_LENGTH))
        served.shapes.check(parsed)
    except TorchshError:
        served.metrics.refused_one()
        raise

    def attach(send):
        def deliver(status, body, headers):
            send(v2_response(status, body, headers))
        try:
            served.offer(batcher.Pending(parsed, deliver))
        except TorchshError as e:
            deliver(*batcher.failure(e))
    return Deferred(attach)


# (method, path regex, handler, summary): rows of daemon/routes.py's table, and --port's whole table
ROUTES = (
    ("GET", r"/v2", get_server, "KServe V2: server metadata (torch serve; docs/serve.md)"),
    ("GET", r"/v2/health/live", get_live, "KServe V2: the server is live"),
    ("GET", r"/v2/health/ready", get_ready, "KServe V2: the server is ready"),
    ("GET", _MODEL, get_model, "KServe V2: a served model's metadata"),
    ("GET", _MODEL + r"/ready", get_model_ready, "KServe V2: whether a served model takes requests"),
    ("POST", _MODEL + r"/infer", post_infer,
     "KServe V2: run a served model on JSON or binary tensors (dynamically batched)"),
)
