"""The route table: one row per endpoint (method, path pattern, handler, summary). OpenAPI is built
from it: this module hands ROUTES and the op table to api/openapi.document, which imports nothing of
the daemon. The fast path is turned on through the App it belongs to (App.enable_fastpath).

Handlers are named method+noun (moby's habit) and live in cli/ (the CLI face) and api/ (the JSON
face). Any exception a handler lets through becomes a JSON error here; the daemon lives on.
`lockfree` sorts requests before they take a worker: those that never wait for the tensor lock
(status, census, free, daemon stop, ...) have workers of their own, so they answer behind any queue.
"""
import json
import logging
import re
import traceback

from torchsh import memory, protocol
from torchsh.api import bundle, files, objects, ops, openapi
from torchsh.cli.run import CliReply, run_cli
from torchsh.errors import TorchshError
from torchsh.jobs import follow
from torchsh.remote import naming
from torchsh.results import Await, Exec, Follow
from torchsh.serve import edge as serving, openai_edge
from torchsh.wire.http import Later, Prepare, Response

log = logging.getLogger("torchd")


def post_cli(app, request, params):
    try:
        fields = protocol.decode_cli_request(request.body)
    except ValueError as e:
        response = error_response(TorchshError("bad_request", str(e)))
        response.headers[protocol.H_ERROR] = error_header(TorchshError("bad_request", str(e)))
        return response
    fields["peer_pid"] = getattr(request, "peer_pid", None)  # owner of a `scope -- CMD` (SO_PEERCRED)
    fields["replies"] = protocol.carried(request.headers.get(protocol.H_REPLIES))
    fields["hold"] = request.hold
    fields["policy"] = request.headers.get(protocol.H_POLICY)  # read in run_cli: a malformed one is its failure
    if app.fastpath is None and fields["env"].get("TORCHSH_FASTPATH"):  # the bash function's fallback asks
        app.enable_fastpath()
    reply = run_cli(app, fields)
    if isinstance(reply.reply, Follow) and "follow" not in fields["replies"]:  # protocol.DAEMON: we follow it
        return Later(lambda client_gone: _followed(reply, client_gone))
    return cli_response(reply)


def _followed(reply, client_gone):
    """The whole output of a job followed here to its end, as one CLI reply (None: the client left)."""
    ended = follow.to_end(reply.ctx, reply.reply, client_gone)
    return None if ended is None else cli_response(CliReply(ended.stdout, ended.stderr, ended.exit,
                                                            downloads=reply.ctx.downloads, error=ended.error))


def cli_response(reply):
    """A CLI reply as HTTP: body stdout then stderr, H_EXIT and H_STDOUT, and the header of its
    protocol.REPLIES row when it carries a reply besides output (its field: the value; exec's body: its fields).
    Output too big to encode in the memory left is out_of_memory, as the client prints any refusal."""
    try:
        return _cli_response(reply)
    except MemoryError as e:
        err = memory.allocation_failure(e)
        log.warning("POST /v1/cli: %s", err.message)
        return _cli_response(CliReply(stderr=err.line() + "\n", exit=protocol.exit_status(err.code), error=err))


def _cli_response(reply):
    stdout = reply.reply.body() if isinstance(reply.reply, Exec) else reply.stdout
    out = stdout if isinstance(stdout, (bytes, bytearray)) else stdout.encode(errors="surrogateescape")
    err = reply.stderr.encode(errors="surrogateescape")
    headers = {protocol.H_EXIT: str(reply.exit), protocol.H_STDOUT: str(len(out))}
    if reply.reply is not None:
        headers[protocol.REPLY_ROWS[reply.reply.reply].header] = reply.reply.field()
        if isinstance(reply.reply, Await):
            headers[protocol.H_SETTINGS] = reply.reply.settings
    if reply.downloads:
        headers[protocol.H_DOWNLOAD] = protocol.staged_pairs(reply.downloads)
    if reply.error is not None and reply.exit:
        headers[protocol.H_ERROR] = error_header(reply.error)
    return Response(200, out + err if err else out, "application/octet-stream", headers)  # no copy of a big stdout


def error_header(err):
    """H_ERROR's value: the error as compact ASCII JSON (a header holds no raw non-ASCII or newline), its texts
    cut at ERROR_TEXT_CHARS so that a head stays far within any reader's limit."""
    def cut(text):
        return text if text is None or len(text) <= ERROR_TEXT_CHARS else text[:ERROR_TEXT_CHARS - 1] + "…"
    return json.dumps({"code": err.code, "message": cut(err.message), "hint": cut(err.hint), "op": cut(err.op)},
                      separators=(",", ":"), ensure_ascii=True)


ERROR_TEXT_CHARS = 4096


def get_openapi(app, request, params):
    return Response(200, json.dumps(openapi.document(ROUTES, app.table), indent=1).encode())


# (method, path regex, handler, summary)
ROUTES = (
    ("POST", r"/v1/cli", post_cli, "Run a CLI command line (argv in; stdout, stderr and exit status out)"),
    ("POST", r"/v1/ops/(?P<op>[\w.]+)", ops.post_op, "Run an op or verb with JSON tensors, args and kwargs"),
    ("GET", r"/v1/ops", ops.get_ops, "The op table: every op and verb with its typed signatures"),
    ("GET", r"/v1/ops/(?P<op>[\w.]+)", ops.get_op, "One op's typed signatures and docs"),
    ("GET", r"/v1/tensors", objects.get_tensors, "Census of every object held, all kinds"),
    ("POST", r"/v1/tensors", objects.post_tensor, "Upload a tensor as an .npy body; returns its handle"),
    ("GET", r"/v1/tensors/(?P<handle>[a-z]+://\w+)", objects.get_tensor, "Download a tensor as .npy (or JSON)"),
    ("DELETE", r"/v1/tensors/(?P<handle>[a-z]+://\w+)", objects.delete_tensor, "Free one object"),
    ("GET", r"/v1/status", objects.get_status, "Daemon status: pid, version, uptime, TTL, objects, memory"),
    ("GET", r"/v1/openapi.json", get_openapi, "This API's OpenAPI 3.1 document"),
    ("POST", r"/v1/files", files.post_file,
     "Stage a caller's file on a remote context's daemon (the body; ?name=BASENAME), or a folder (?folder=NAME, "
     "then ?in=ID&path=RELATIVE per file); its id out"),
    ("GET", r"/v1/files/(?P<id>[0-9a-f]+)", files.get_file,
     "A staged output file, once (then removed); a staged folder: the ids of its files"),
    ("POST", r"/v1/bundle/export", bundle.post_export,
     "Objects as one bundle (handles in, one a line; a safetensors stream out: JSON header, raw bytes)"),
    ("POST", r"/v1/bundle/import", bundle.post_import,
     "Hold a bundle's objects (?keep=1: under their own handles); the handles out, one a line"),
) + serving.ROUTES + openai_edge.ROUTES
_COMPILED = [(m, re.compile("^%s$" % p), h) for m, p, h, _ in ROUTES]


def dispatch(app, request):
    # handles of a named context (`tensor://gpu1/k3f00012`) are translated at this edge (remote/naming.py)
    return naming.dispatch(app, request, _route)


_OP_NAME = re.compile(r"[\w.]+")


def _route(app, request):
    path = request.path
    if request.method == "POST" and path.startswith("/v1/ops/") and _OP_NAME.fullmatch(path, 8):
        return _handle(app, request, ops.post_op, {"op": path[8:]})  # the API's hot route: no table walk
    allowed = []
    for method, pattern, handler in _COMPILED:
        match = pattern.match(path)
        if not match:
            continue
        if method != request.method:
            allowed.append(method)
            continue
        return _handle(app, request, handler, match.groupdict())
    if allowed:
        response = error_response(TorchshError("bad_request", "%s takes %s" % (path, "/".join(allowed))), 405)
        response.headers["Allow"] = ", ".join(allowed)  # RFC 9110: a 405 says what the resource takes
        return response
    return error_response(TorchshError("not_found", "no endpoint %s %s" % (request.method, path)))


def _handle(app, request, handler, params):
    try:
        response = handler(app, request, params)
    except TorchshError as e:
        return error_response(e)
    except Exception as e:
        return _internal(app, request, e)
    if isinstance(response, (Later, Prepare)):  # their failures, later, are replies as the handler's are
        return Later(_guarded(app, request, response.make)) if isinstance(response, Later) else Prepare(
            _guarded(app, request, response.run))
    return response


def _guarded(app, request, make):
    """A Later reply's maker (it runs on a follower) or a Prepare's run (on a quick worker), its failures turned
    into replies as the handler's are."""
    def guarded(*args):
        try:
            return make(*args)
        except TorchshError as e:
            return error_response(e)
        except Exception as e:
            return _internal(app, request, e)
    return guarded


def _internal(app, request, exc):
    """A handler's failure: out_of_memory when an allocation failed (a MemoryError encoding a big reply),
    else internal_error with the traceback in the log."""
    oom = memory.allocation_failure(exc)
    if oom is not None:
        log.warning("%s %s: %s", request.method, request.path, oom.message)
        return error_response(oom)
    log.error("internal error on %s %s\n%s", request.method, request.path, traceback.format_exc())
    return error_response(TorchshError("internal_error", "internal error", "see %s" % app.log_path))


_LOCKFREE_GETS = {"/v1/status", "/v1/tensors", "/v1/ops", "/v1/openapi.json"}


def lockfree(app, request):
    """True when the request never takes the tensor lock: the op's own `lockfree` flag, which is what
    cli/run.invoke goes by, or an endpoint that only reads metadata. In doubt, False (a tensor worker)."""
    method, path = request.method, request.path
    if path.startswith("/v2") or openai_edge.lockfree(path):  # torch serve's: queued, never run, by its handler
        return True
    try:
        if method == "GET":
            return path in _LOCKFREE_GETS or path.startswith(("/v1/ops/", "/v1/files/"))
        if method == "DELETE":
            return True  # free one object: the registry has its own lock
        if method != "POST":
            return False
        if path == protocol.CLI_PATH:
            argv = [w.decode(errors="surrogateescape") for w in request.body.split(b"\0")[6:]]
            op = app.table.resolve(argv)[0] if argv else None
        elif path.startswith("/v1/ops/"):
            if ops.prepares(request):  # its big body is decoded on a quick worker first (http.Prepare)
                return True
            op = app.table.lookup(path[len("/v1/ops/"):])[0]
        else:
            return path == "/v1/files"  # file I/O only: a staged upload never waits for tensor work
        return bool(op is not None and op.lockfree)
    except Exception:  # unknown op, bad body: the handler will say so; it never needs the lock for that
        return False


def error_response(err, status=None):
    return json_response(err.to_json(), status or protocol.http_status(err.code))


def json_response(value, status=200):
    return Response(status, json.dumps(value, separators=(",", ":"), allow_nan=True).encode())
