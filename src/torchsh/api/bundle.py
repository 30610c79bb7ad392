"""POST /v1/bundle/export and /v1/bundle/import: objects between daemons (`torch cp`, `session push`).

export: body = handles, separated by whitespace (one per line, say); reply = the bundle (session/snapshot.py:
a safetensors stream, the manifest JSON in its header, raw tensor bytes after it). import: body = a bundle;
reply = the new handles, one per line, in the order export was given them. ?keep=1 keeps the bundle's own
handles (and scopes), as `session load` does; ?scope=ID puts new handles in a scope. The bundle's names
(`@enc`) name the copies: one held here by another object is name_in_use (nothing is held), unless
?force=1, which moves it (the other object stays reachable as @enc~1). Bulk data is raw bytes,
never JSON.
"""
from torchsh.errors import TorchshError
from torchsh.session import transfer
from torchsh.wire.http import Response


def post_export(app, request, params):
    handles = request.body.decode(errors="replace").split()
    if not handles:
        raise TorchshError("bad_request", "the body names no handles", "send handles, one per line (or space)")
    with app.tensor_lock("bundle export"):
        data = transfer.export(app.registry, handles)
    return Response(200, data, "application/octet-stream")


def post_import(app, request, params):
    keep = request.query.get("keep") in ("1", "true")
    force = request.query.get("force") in ("1", "true")
    with app.tensor_lock("bundle import"):
        handles, _ = transfer.restore(app.registry, request.body, keep, "the request body",
                                      scope=request.query.get("scope"), owners=False, force=force)
    return Response(200, "".join(h + "\n" for h in handles).encode(), "text/plain")
