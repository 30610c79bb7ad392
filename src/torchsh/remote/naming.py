"""Handle names across contexts, at the faces' edge: inside the daemon a handle is `kind://EEEnnnnn`; a
command run on a named context (the request's `Torchsh-Context: NAME` header, which the client and
torch.nu send) sees `kind://NAME/EEEnnnnn` in everything it gets back, and may give either form.

Given to a daemon, a handle of ANOTHER context fails with one line naming both and pointing to `torch cp`
(wrong_context): `kind://OTHER/…`, or, on a named context, an unprefixed handle of another daemon (its
epoch is not this daemon's: it came from the default one). `kind://default/…` names the local daemon
explicitly (what a command on one context prints for a handle it made on the default one). A name is
qualified alike: `@gpu1:enc` is the name `@enc` on context gpu1 (a name has no `:`), `@default:enc` the local
daemon's; only a word that starts with `@` counts (never `ssh://me@box:22`).

Text, not structure: the request's body (argv and stdin of /v1/cli, the JSON of /v1/ops) and target are
rewritten before routing, the reply's text after it. Binary bodies (.npy) are left alone.
"""
import json
import re

from torchsh import protocol
from torchsh.errors import TorchshError
from torchsh.registry.kinds import KINDS
from torchsh.wire.http import Later, Response

DEFAULT = "default"
HEADER = "torchsh-context"
_KINDS = "|".join(sorted(KINDS, key=len, reverse=True))
# kind://NAME/ID, and a bare kind://ID not followed by "/" (so a prefixed one is never prefixed twice)
_QUALIFIED = re.compile(rb"\b(%s)://([A-Za-z0-9][A-Za-z0-9_.-]{0,62})/([0-9a-z]{8,})\b" % _KINDS.encode())
# what every _QUALIFIED match contains, found without trying each kind at each word boundary (~1 us less)
_MAYBE_QUALIFIED = re.compile(rb"://[A-Za-z0-9][A-Za-z0-9_.-]{0,62}/")
_BARE = re.compile(rb"\b(%s)://([0-9a-z]{8,})\b(?![/.-])" % _KINDS.encode())
# @CTX:NAME at the start of a word (argv and stdin words, a JSON string, a list item, a --flag=value)
_CONTEXT_NAME = re.compile(rb"(?<![^\0\s\"'\[,=])@([A-Za-z0-9][A-Za-z0-9_.-]{0,62}):(?=[A-Za-z0-9_.\-])")
_MAYBE_CONTEXT_NAME = re.compile(rb"@[A-Za-z0-9][A-Za-z0-9_.-]{0,62}:")


def qualify(handle, name):
    """How `handle` (kind://ID of the daemon reached as context NAME) is written on another context's command line."""
    kind, _, rest = handle.partition("://")
    return "%s://%s/%s" % (kind, name, rest)


def wrong_context(handle, its, here, op=None):
    target = "--to %s" % here
    return TorchshError("wrong_context", "%s belongs to context %s, but this command runs on context %s"
                        % (handle, its, here),
                        "copy it there: torch --context %s cp %s %s" % (its, handle, target), op=op)


def strip(data, here, epoch, holds=lambda handle: False):
    """The request bytes with this context's prefixes removed; wrong_context for another context's handle.
    On a named context a bare handle of another epoch came from the default daemon, unless this one holds
    it (`session load` restores handles under their saved epoch): holds(handle text) says."""
    if b"@" in data:
        data = _strip_names(data, here)
    if b"://" not in data:
        return data
    if here != DEFAULT:  # before unqualifying: kind://HERE/ID of a restored session is this daemon's too
        for m in _BARE.finditer(data):
            if m.group(2)[:3] != epoch and not holds(m.group(0).decode()):
                raise wrong_context(m.group(0).decode(), DEFAULT, here)

    def unqualify(m):
        its = m.group(2).decode()
        if its != here:
            raise wrong_context(m.group(0).decode(), its, here)
        return m.group(1) + b"://" + m.group(3)
    return _QUALIFIED.sub(unqualify, data)


def _strip_names(data, here):
    """`@HERE:enc` -> `@enc`; wrong_context for `@OTHER:enc`."""
    def unqualify(m):
        its = m.group(1).decode()
        if its != here:
            word = re.match(rb"@[^\0\s\"',\]]*", data[m.start():]).group(0).decode(errors="replace")
            raise wrong_context(word, its, here)
        return b"@"
    return _CONTEXT_NAME.sub(unqualify, data)


def prefix(data, here):
    """Reply bytes with every bare handle written kind://HERE/ID."""
    if b"://" not in data:
        return data
    return _BARE.sub(lambda m: m.group(1) + b"://" + here.encode() + b"/" + m.group(2), data)


def dispatch(app, request, inner):
    """Run `inner` (the route table) with handle names translated for the request's context."""
    here = request.headers.get(HEADER) or DEFAULT
    path = request.path
    cli = path == protocol.CLI_PATH
    textual = cli or path.startswith("/v1/ops/")
    body = request.body
    if here == DEFAULT and "://" not in request.target and (not textual or not (
            _MAYBE_QUALIFIED.search(body) or b"@" in body and _MAYBE_CONTEXT_NAME.search(body))):
        return inner(app, request)  # the common local command: no handle of a named context to check
    try:
        epoch, holds = app.registry.epoch.encode(), app.registry.holds
        request.target = strip(request.target.encode(), here, epoch, holds).decode()
        if textual:
            request.body = strip(request.body, here, epoch, holds)
    except TorchshError as e:
        return _refusal(e, request, cli)
    response = inner(app, request)
    return _prefixed(response, here, cli) if here != DEFAULT else response


def _prefixed(response, here, cli):
    """The reply with this context's handles named: a Response now, a Later one when it is made (a job followed
    for the caller); other replies (a Prepare, whose request is dispatched again; a served model's Deferred,
    which holds no handles) as they are."""
    if isinstance(response, Later):
        make = response.make
        return Later(lambda client_gone: _prefixed(make(client_gone), here, cli))
    if isinstance(response, Response):
        _prefix_reply(response, here, cli)
    return response


def _refusal(err, request, cli):
    if not cli:
        return Response(protocol.http_status(err.code), json.dumps(err.to_json()).encode())
    argv = request.body.split(b"\0")[6:7]
    err.op = argv[0].decode(errors="replace")[:60] if argv else None
    line = (err.line() + "\n").encode()
    return Response(200, line, "application/octet-stream",
                    {protocol.H_EXIT: str(protocol.exit_status(err.code)), protocol.H_STDOUT: "0"})


def _prefix_reply(response, here, cli):
    body = response.body
    if cli:
        n = int(response.headers.get(protocol.H_STDOUT, len(body)))
        out, err = body[:n], body[n:]
        if b"\0" not in out:  # binary stdout (raw bytes of a tensor) is never rewritten
            out = prefix(out, here)
        response.body = out + prefix(err, here)
        if protocol.H_STDOUT in response.headers:
            response.headers[protocol.H_STDOUT] = str(len(out))
    elif response.content_type.startswith("application/json"):
        response.body = prefix(bytes(body), here)
