"""GET/POST /v1/tensors, GET/DELETE /v1/tensors/{handle}, GET /v1/status. Bulk data as .npy bodies."""
import io
import json

import numpy as np
import torch

from torchsh.context import Context
from torchsh.daemon.http import Response
from torchsh.daemon.status import status_dict
from torchsh.errors import TorchshError
from torchsh.registry.census import census_rows


def _json(value, status=200):
    return Response(status, json.dumps(value, separators=(",", ":"), allow_nan=True).encode())


def get_tensors(app, request, params):
    return _json({"objects": census_rows(app.registry)})


def get_status(app, request, params):
    return _json(status_dict(app))


def post_tensor(app, request, params):
    """Body: an .npy file. Query: requires_grad=true, scope=ID. Returns {"result": handle}."""
    try:
        array = np.load(io.BytesIO(request.body), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise TorchshError("bad_request", "body is not an .npy array: %s" % e)
    env = {"TORCHSH_SCOPE": request.query["scope"]} if "scope" in request.query else {}
    ctx = Context(app, env=env)
    with app.tensor_lock("upload"):
        t = torch.from_numpy(array.copy() if not array.flags.writeable else array)
        if request.query.get("requires_grad") in ("1", "true"):
            t.requires_grad_(True)
        handle = ctx.put(t)
    return _json({"result": handle})


def get_tensor(app, request, params):
    t = app.registry.get(params["handle"], "tensor")
    if request.query.get("format") == "json":
        from torchsh.verbs.tensors import tensor_json
        return Response(200, b'{"result":' + tensor_json(t).encode() + b"}")
    buf = io.BytesIO()
    with app.tensor_lock("download"):
        np.save(buf, t.detach().cpu().resolve_conj().numpy(), allow_pickle=False)
    return Response(200, buf.getvalue(), "application/octet-stream")


def delete_tensor(app, request, params):
    app.registry.free([params["handle"]])
    return Response(204, b"")
