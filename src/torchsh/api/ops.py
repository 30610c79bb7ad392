"""POST /v1/ops/{op}: {"tensors": [...], "args": [...], "kwargs": {...}} -> {"result": ...}.

`args` bind positionally by kind and `kwargs` are flags; `tensors` (the API's stdin) then fill the
tensor slots the args left open, leftmost first: {"tensors": [x], "args": [m]} runs forward(m, x).
The same binder and invoker as the CLI, so both faces resolve overloads identically. PyTorch's
warnings come back as "warnings": [first line of each], beside "result".
Optional body fields: "cwd" (for relative paths), "env" (TORCHSH_* settings), "no_grad", "exec" (true: the
caller runs a block form's command itself; the same as listing exec in the Torchsh-Replies header),
"stderr_tty" (true: the caller's stderr is a terminal, so a followed job's progress is a live line), "name" (the
object the op makes gets this @name, as --name does; "ttl": "30m" with it, as --ttl). A "@name" word anywhere
a handle goes names its object.
Replies besides output (protocol.REPLIES) the caller lists in the Torchsh-Replies header come back as a
field of their name: {"exec": …}, {"follow": …, "stdout", "stderr"}, {"copy": …}, {"handover": …}; for one it
does not list, the daemon follows a job to its end itself (a foreground fit answers its rows once it ends),
or refuses with needs_client (call/replies.py).
A body of PREPARE_BYTES and more is decoded on a quick worker before its turn on the tensor thread
(api/bigbody.py): post_op answers http.Prepare there, and runs with request.prepared on the tensor thread.
"""
import json

from torchsh import protocol, results
from torchsh.api import bigbody, calls
from torchsh.api.openapi import op_description
from torchsh.call import bind, parse, policy, replies, tokens, towire
from torchsh.call.invoke import convert_all, invoke
from torchsh.call.misfit import no_binding
from torchsh.context import Context
from torchsh.errors import TorchshError
from torchsh.jobs import follow
from torchsh.registry import names
from torchsh.table import aliases
from torchsh.table.kinds import LIST_FLAG_KINDS
from torchsh.text import suggest
from torchsh.text.jsonout import nan_mode, result_json
from torchsh.wire.http import Later, Prepare, Response

# The replies a JSON caller can list (the others move the caller's files or its stdin: the CLI's)
JSON_REPLIES = frozenset({"exec", "follow", "copy", "await", "handover"})


def post_op(app, request, params):
    op, fixed = app.table.lookup(params["op"])
    nan = nan_mode(request.query)
    if prepares(request):  # on a quick worker (routes.lockfree): decoded there, then run on the tensor thread
        return Prepare(lambda: bigbody.prepare(app, request))
    body = _body(request)
    if not isinstance(body, dict):
        raise TorchshError("bad_request", "body must be a JSON object")
    tensors, args, kwargs, env, cwd = _fields(body)
    for k, v in env.items():
        if not isinstance(v, (str, int, float, bool)):
            raise TorchshError("bad_request", "env value %s must be a string, not %s" % (k[:60], _json_type(v)))
    plain = body.keys() <= calls.PLAIN_FIELDS
    ctx, globals_ = _context(app, request, body, env, cwd, plain)
    ctx.policy = policy.from_header(request.headers.get(protocol.H_POLICY))  # as the CLI face's (call/policy.py)
    policy.check(ctx.policy, op, set(fixed) | set(kwargs or ()))
    if kwargs and "name" in kwargs and "name" not in op.flags():  # the global --name, as the CLI parses it
        kwargs = dict(kwargs)
        ttl = kwargs.pop("ttl") if "ttl" in kwargs and "ttl" not in op.flags() else None
        ctx.naming(op, str(kwargs.pop("name")), ttl)
    elif not plain:  # "name": "enc", "ttl": "30m", as --name and --ttl on the command line
        ctx.naming(op, _field(body, "name", str, None), _field(body, "ttl", str, None))
    if kwargs:
        kwargs = aliases.own_names(op.name, op.flags(), {k.replace("-", "_"): v for k, v in kwargs.items()})
    if op.replies and "follow" in op.replies and "json" in op.flags() and "json" not in kwargs:
        kwargs = dict(kwargs, json=True)  # a job's rows reach a JSON caller as JSON lines, never as columns
    shape = calls.key(params["op"], args, tensors, kwargs, app.registry.kind_of) if plain else None
    plan = calls.plan_for(shape, op) if shape is not None else None
    if plan is not None:  # a call of a shape seen before: its words go straight to their slots
        binding, convert = calls.PlannedCall(plan, args, tensors, kwargs), calls.convert
    else:
        binding, convert = _bind_body(op, fixed, args, tensors, kwargs, shape, app.registry.names.lookup), convert_all
    warned = []
    try:
        if op.replies:  # a caller lacking a reply the op declares: handed over or refused, nothing runs
            replies.check(ctx, op)
        result = invoke(ctx, op, binding, globals_, warned, convert)
    except TorchshError as e:
        e.op = e.op or op.name
        names.say_given(e, [args, kwargs], app)
        raise
    except results.Handover as h:  # the caller runs the command with the `torch` client
        h.op = h.op or op.name
        return _json({"handover": h.json()})
    return _answer(ctx, result, nan, warned)


def prepares(request):
    """Whether the request's body is big enough to be decoded before its turn on the tensor thread
    (api/bigbody.py), and is not yet."""
    return request.prepared is None and len(request.body) >= bigbody.PREPARE_BYTES


def _body(request):
    """The request's JSON body (a big one decoded already, off the tensor thread: api/bigbody.py)."""
    if request.prepared is not None:
        return request.prepared
    try:
        return tokens.loads(request.body or b"{}")
    except ValueError as e:
        raise TorchshError("bad_request", "body is not JSON: %s" % e)


def _context(app, request, body, env, cwd, plain):
    """(the request's Context, the global switches or None): the replies the caller lists (Torchsh-Replies;
    "exec": true lists exec) and the body's switches, each a JSON boolean or bad_request. No peer_pid: an API
    caller that runs a block itself may be a one-shot process (curl) gone before the block ends."""
    listed = request.headers.get(protocol.H_REPLIES)
    carried = protocol.carried(listed) & JSON_REPLIES if listed else replies.NONE
    if plain:  # arrays and nothing else: the common body, no switch to read
        return Context(app, cwd, {k: str(v) for k, v in env.items()} if env else {}, replies=carried), None
    switches = {k: _field(body, k, bool, False) for k in ("no_grad", "inference_mode", "exec", "stderr_tty")}
    ctx = Context(app, cwd, {k: str(v) for k, v in env.items()} if env else {}, stderr_is_tty=switches["stderr_tty"],
                  replies=carried | {"exec"} if switches["exec"] else carried)
    return ctx, {k: switches[k] for k in ("no_grad", "inference_mode")}


_NOT_PLAIN = (results.Follow, results.Exec, results.Copy, results.Await, results.Binary)


def _answer(ctx, result, nan, warned):
    """The JSON reply for what the op returned: its result, or a reply besides output by its name."""
    if not isinstance(result, _NOT_PLAIN):  # what nearly every op returns, at the cost of one test
        return Response(200, result_json(result, towire.to_wire(result, ctx), nan, warned))  # valid JSON unless ?nan=bare
    if isinstance(result, results.Follow):
        if "follow" in ctx.replies:
            return _json({"follow": result.json(), "stdout": result.stdout, "stderr": result.stderr})
        return Later(lambda client_gone: _followed(ctx, result, client_gone, nan))  # protocol.DAEMON
    if isinstance(result, results.Exec):  # the caller runs the block itself (torch.nu's `torch scope { … }`)
        return _exec_reply(ctx.app, result)
    if isinstance(result, results.Copy):
        return _json({"copy": result.json()})
    if isinstance(result, results.Await):  # SKIP unless listed: the stop is not waited for
        return _json(dict({"result": result.text}, **({"await": {"pid": result.pid}} if "await" in ctx.replies else {})))
    return Response(200, bytes(result), "application/octet-stream")  # Binary


def _followed(ctx, first, client_gone, nan):
    """A job followed here to its end (the caller lists no follow): a foreground run answers its epoch rows, as
    the verb's result (a failed run: its error; a stopped one: the rows, and where it stopped as a warning);
    a job verb answers {stdout, stderr, exit}. None when the client left first (a leased run then stops)."""
    ended = follow.to_end(ctx, first, client_gone)
    if ended is None:
        return None
    job = first.job
    if first.view != "run":
        return Response(200, result_json(ended, towire.to_wire(ended, ctx), nan))
    if job.error is not None:
        return Response(protocol.http_status(job.error.code), _json(job.error.to_json()).body)
    stopped = [job.stopped_line()] if job.state == "stopped" else []
    return Response(200, result_json(job.rows(), job.rows(), nan, stopped))


def _json(value):
    return Response(200, json.dumps(value, separators=(",", ":")).encode())


def _bind_body(op, fixed, args, tensors, kwargs, shape, lookup):
    """The full path: tokens (a `@name` as its handle's: lookup), `-`, flags checked, overload chosen; the
    plan is remembered for the shape."""
    args, tensors = _put_dashes(op, args, tensors)
    positionals, piped = [calls.word_token(v) for v in args], [calls.word_token(v) for v in tensors]
    positionals, flags = parse.named(positionals, {k: _flag_token(op, k, v) for k, v in dict(fixed, **kwargs).items()},
                                     lookup)
    piped = [tokens.named(t, lookup) for t in piped]
    unknown = [k for k in flags if k not in op.flags()]
    if unknown:
        raise TorchshError("unknown_flag", "%s takes no argument %s" % (op.name, ", ".join(unknown)),
                           suggest.flag(unknown[0], list(op.flags())), op=op.name)
    binding = _bind(op, positionals, piped, flags)
    if shape is not None and not op.block:
        calls.remember(shape, op, binding, positionals, piped, flags, set(fixed) - set(kwargs))
    return binding


def _bind(op, positionals, piped, flags):
    """The binding of args (positionals) and the piped tensors: args by kind first, then the tensors
    fill the slots left open; a one-line error when nothing fits."""
    binding = None
    if piped and not positionals:  # only piped handles: they are the leading words (the common call, no search)
        binding = bind.best(op, piped, flags)
    if binding is None and piped:
        binding = bind.fill_stdin(op, positionals, flags, piped)
    if binding is None:  # no tensors, or no open slot takes them: then they go before the args, in order
        positionals = piped + positionals
        binding = bind.best(op, positionals, flags)
    if binding is None:
        err = no_binding(op, bind.choose(op, positionals, flags)[1], positionals, flags)
        err.op = op.name
        raise err
    return binding


def _put_dashes(op, args, tensors):
    """Each "-" in args takes the next of `tensors` there, as `-` does on the command line
    (`$t | torch cat - $u` in nu); the tensors left over fill open slots as usual."""
    dashes = sum(1 for v in args if v == "-")
    if not dashes:
        return args, tensors
    if dashes > len(tensors):
        raise TorchshError("missing_argument", "%d `-` in args but %d piped tensor(s)" % (dashes, len(tensors)),
                           op.usage(), op=op.name)
    rest = list(tensors)
    return [rest.pop(0) if v == "-" else v for v in args], rest


def _fields(body):
    """(tensors, args, kwargs, env, cwd) of a body, each of the JSON type the API documents (absent or
    null: empty, cwd "/"); bad_request otherwise. The common body (arrays and nothing else) in one test."""
    tensors, args, kwargs = body.get("tensors"), body.get("args"), body.get("kwargs")
    if (type(tensors) is list or tensors is None) and (type(args) is list or args is None) and (
            kwargs is None and "env" not in body and "cwd" not in body):
        return tensors or [], args or [], {}, {}, "/"
    return (_field(body, "tensors", list, []), _field(body, "args", list, []), _field(body, "kwargs", dict, {}),
            _field(body, "env", dict, {}), _field(body, "cwd", str, "/") or "/")


def _field(body, name, want, default):
    """body[name] if it has the JSON type the API documents (absent or null: the default), else bad_request."""
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, want):
        raise TorchshError("bad_request", "%r must be a JSON %s, not %s"
                           % (name, {list: "array", dict: "object", str: "string", bool: "boolean"}[want],
                              _json_type(value)))
    return value


_JSON_TYPES = ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "an array"),
               (dict, "an object"))


def _json_type(value):
    return next((name for t, name in _JSON_TYPES if isinstance(value, t)), "null")


def _flag_token(op, name, value):
    """A JSON kwarg as the CLI parser makes it: handle lists (`--inputs A B`) item by item, argv as argv."""
    spec = op.flags().get(name)
    if spec is not None and isinstance(value, list):
        if spec.kind in LIST_FLAG_KINDS:
            return [tokens.from_json(v) for v in value]
        if spec.kind == "argv":
            return tokens.Token("argv", [str(v) for v in value], "--")
    return calls.word_token(value)  # a string flag keeps its own text: `--search nan` is the word, not a float


def _exec_reply(app, e):
    """A block form's directive as data: the TORCHSH_* settings for the block, then the op that closes it."""
    then = None
    if e.then_argv:
        then_op, _, words = app.table.resolve(list(e.then_argv))
        then = {"op": then_op.name, "args": words}
    return Response(200, json.dumps({"exec": {"env": e.env, "then": then}}, separators=(",", ":")).encode())


def get_ops(app, request, params):
    category = request.query.get("category")
    rows = [op.to_json() for op in app.table.in_category(category)]
    return Response(200, json.dumps({"ops": rows}, separators=(",", ":")).encode())


def get_op(app, request, params):
    op, _ = app.table.lookup(params["op"])
    return Response(200, json.dumps(op_description(op), separators=(",", ":")).encode())
