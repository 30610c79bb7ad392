"""The bearer token of `torch mcp --http --port N`, and the gate that checks it before anything of MCP runs.

The token file is made and read as every door's token of the house (link/tls.py's ensure_token_file, as
`serve --port` and the TLS listener do): O_EXCL|O_NOFOLLOW and mode 0600 in the daemon's private folder,
read only when trust.untrusted finds it ours (a regular file of our uid, writable by nobody else, one link).
Each request carries `Authorization: Bearer TOKEN`; one without it, or with another, is answered 401 before
the MCP app sees it: nothing is read from its body and nothing runs.
"""
import hmac
import json

from torchsh import paths
from torchsh.errors import TorchshError
from torchsh.link import tls


def token_path(socket_path):
    """Beside the daemon's socket: torchd.sock -> torchd.mcp.token."""
    return paths.sibling(socket_path, ".mcp.token")


def ensure_token(path):
    """The token in PATH, made there first when there is none (64 hex digits). untrusted when the file is not
    ours and private: it is never read then."""
    try:
        return tls.ensure_token_file(path)
    except ValueError as e:
        raise TorchshError("untrusted", str(e), "remove %s; the next `torch mcp --http --port` makes a new one"
                           % path) from None


class BearerGate:
    """ASGI middleware: an HTTP request reaches APP only with `Authorization: Bearer TOKEN` (compared in
    constant time); otherwise 401 with the house's error JSON (a websocket: closed). Lifespan events pass through."""

    def __init__(self, app, token, where):
        self.app, self.expected, self.where = app, b"Bearer " + token, where

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan" or self.shows_token(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket without the token: closed before the app sees it
            await send({"type": "websocket.close", "code": 1008})
            return
        body = refusal_body(self.where)
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                                (b"www-authenticate", b'Bearer realm="torchsh-mcp"')]})
        await send({"type": "http.response.body", "body": body})

    def shows_token(self, scope):
        given = [value for name, value in scope.get("headers", ()) if name == b"authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0], self.expected)


def refusal_body(token_file):
    """The 401's body: {"code","message","hint"}, as a tool error carries it (token_refused)."""
    return json.dumps({"code": "token_refused", "message": "this port wants the header Authorization: Bearer TOKEN",
                       "hint": "TOKEN is in %s" % token_file}).encode()
