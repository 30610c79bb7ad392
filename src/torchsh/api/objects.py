"""GET/POST /v1/tensors, GET/DELETE /v1/tensors/{handle}, GET /v1/status. Bulk data as .npy bodies.

JSON replies are valid JSON (non-finite floats as "NaN", "Infinity", "-Infinity") unless the query
says ?nan=bare (Python's bare tokens, which Nushell's NUON reads as floats)."""
import io

import numpy as np
import torch
from torch.nn.parameter import is_lazy

from torchsh.api.status import status_dict
from torchsh.context import Context
from torchsh.errors import TorchshError
from torchsh.registry.census import census_rows
from torchsh.text import tensortext
from torchsh.text.jsonout import json_bytes, nan_mode
from torchsh.wire.http import Response


def _json(value, status=200, nan="string"):
    return Response(status, json_bytes(value, nan))


def get_tensors(app, request, params):
    """The census, lock-free: every object's row has `bytes`, an int (see registry/census.py)."""
    return _json({"objects": census_rows(app.registry)}, nan=nan_mode(request.query))


def get_status(app, request, params):
    return _json(status_dict(app), nan=nan_mode(request.query))


def post_tensor(app, request, params):
    """Body: an .npy file. Query: requires_grad=true, scope=ID. Returns {"result": handle}."""
    from torchsh.fileio import npy_from_bytes
    array = npy_from_bytes(request.body, "the body")
    env = {"TORCHSH_SCOPE": request.query["scope"]} if "scope" in request.query else {}
    ctx = Context(app, env=env)
    with app.tensor_lock("upload"):
        try:
            t = torch.from_numpy(array.copy() if not array.flags.writeable else array)
        except TypeError as e:  # an .npy of a dtype PyTorch has no tensor for (strings, objects, structs)
            raise TorchshError("bad_request", "cannot make a tensor of the .npy body: %s" % e) from None
        if request.query.get("requires_grad") in ("1", "true"):
            if not (t.is_floating_point() or t.is_complex()):
                raise TorchshError("dtype_error", "only floating point and complex tensors can require grad, "
                                   "not %s" % str(t.dtype).replace("torch.", ""), "upload float32 or float64 data")
            t.requires_grad_(True)
        handle = ctx.put(t)
    return _json({"result": handle})


def get_tensor(app, request, params):
    form = request.query.get("format", "npy")
    if form not in ("npy", "json"):
        raise TorchshError("bad_request", "format=%s: use format=npy (the default) or format=json" % form[:40])
    t = app.registry.get(params["handle"], "tensor")
    if is_lazy(t):
        raise TorchshError("torch_error", "%s is a lazy module's uninitialized parameter: it has no data yet"
                           % params["handle"], "run the module once (`torch forward MODEL INPUT`) first")
    if t.is_meta:
        raise TorchshError("device_error", "%s is on the meta device: it has a shape but no data" % params["handle"],
                           "make it on a real device (--device cpu)")
    if form == "json":  # copied under the lock, formatted after (text/tensortext.py)
        nan = nan_mode(request.query)
        with app.tensor_lock("download"):
            snap = tensortext.snapshot(t)
        return Response(200, b"".join([b'{"result":', *tensortext.json_pieces(snap, nan), b"}"]))
    buf = io.BytesIO()
    with app.tensor_lock("download"):
        try:
            array = t.detach().cpu().resolve_conj().numpy()
        except TypeError as e:  # bfloat16, float8, uint types numpy lacks
            raise TorchshError("dtype_error", "numpy has no %s: %s" % (str(t.dtype).replace("torch.", ""), e),
                               "ask ?format=json, or `torch to` another dtype first") from None
        np.save(buf, array, allow_pickle=False)
    return Response(200, buf.getvalue(), "application/octet-stream")


def delete_tensor(app, request, params):
    app.jobs.refuse_freeing(app.registry, [params["handle"]])  # what a running job trains (docs/jobs.md)
    app.registry.free([params["handle"]])
    return Response(204, b"")
