"""`torch serve --port P`: the V2 routes (serve/edge.py) on a TCP port, plain HTTP on a loopback address and
HTTPS beyond it: a door of the daemon's one server loop (wire/doors.py, daemon/server.py), not a server of
its own. Its connections are read by the loop and answered by the same workers as the Unix socket's; an
inference request's reply is the batch loop's Deferred, as there.

House rules: every TCP listener wants a token, and one beyond loopback speaks only TLS. The daemon keeps the
token in a 0600 file beside its socket (torchd.serve.token, made at the first --port); each request carries
`Authorization: Bearer TOKEN` in its head, checked before its body is read; one without it gets 403
token_refused and its connection closes. On any other --host (0.0.0.0, the machine's address) every
connection is TLS 1.3 with the daemon's own certificate, the one its `--listen` door shows (link/tls.py:
self-signed, CN torchd, made at first use), so the token never crosses a network in the clear; a client
pins that certificate (curl --cacert CERT --resolve torchd:PORT:HOST); the loop does the handshake without
blocking. Routes: the V2 ones and the OpenAI ones only (404 otherwise); its own refusals in V2's shape.

Budgets (docs/security.md): SLOTS connections that showed the token; WAITING connections that have not yet
(PER_PEER of them from one address), each with HEAD_S from its accept to a head with the token, its TLS
handshake included; a new one past those caps pushes out the oldest waiting one: nobody without the token can
keep its holder out. Past SLOTS, 503 overloaded with Retry-After, never a reset. A whole request within
REQUEST_S of its first byte (408), IDLE_S between kept-alive requests, a body over edge.MAX_BODY 413.
"""
import re
import socket
import subprocess

from torchsh import paths
from torchsh.errors import TorchshError
from torchsh.link import tls
from torchsh.remote.listener import is_loopback
from torchsh.serve import batcher, edge, openai_edge
from torchsh.wire.doors import RETRY_AFTER_S, Door, expects_continue, header_is

SLOTS = 256       # connections that showed the token
WAITING = 256     # connections that have not yet: they hold no slot
PER_PEER = 64     # of those, from one address
HEAD_S = 5.0      # from accept to a head with the token (and the TLS handshake)
REQUEST_S = 30.0  # a whole request, from its first byte
IDLE_S = 30.0     # between kept-alive requests
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_ROUTES = [(m, re.compile("^%s$" % p)) for m, p, _, _ in edge.ROUTES + openai_edge.ROUTES]


def token_path(socket_path):
    return paths.sibling(socket_path, ".serve.token")


def ensure_token(socket_path):
    """The daemon's --port token: made once (0600, in the daemon's private folder), then read."""
    path = token_path(socket_path)
    try:
        return tls.ensure_token_file(path)
    except ValueError as e:
        raise TorchshError("untrusted", str(e), "remove %s; the next --port makes a new one" % path) from None


class PortDoor:
    """HOST:PORT opened as a door of the daemon's loop (app.doors) until close()."""

    def __init__(self, app, host, port):
        if getattr(app, "doors", None) is None:
            raise TorchshError("not_supported", "--port needs the daemon's server loop", "run torch serve in torchd")
        context = None if is_loopback(host) else _tls_context(app.socket_path)
        self.app, self.bearer = app, b"Bearer " + ensure_token(app.socket_path)
        listener = _bind(host, port)
        self.host, self.port, self.tls = host, listener.getsockname()[1], context is not None
        self.door = Door("serve", "port %s" % self.url(), listener, SLOTS, edge.MAX_BODY, REQUEST_S, IDLE_S, _refusal,
                         gate=self._gate, refused=_refusal("token_refused", "this port wants the header "
                                                           "Authorization: Bearer TOKEN",
                                                           "TOKEN is in %s" % token_path(app.socket_path)),
                         screen=_served_only, tls=context, waiting_limit=WAITING, per_peer=PER_PEER, head_s=HEAD_S)
        app.doors.open(self.door)

    def url(self):
        return "%s://%s:%d" % ("https" if self.tls else "http", "[%s]" % self.host if ":" in self.host else self.host,
                               self.port)

    def certificate(self):
        """(path, SHA-256 fingerprint) of the certificate a TLS port shows, or None on loopback."""
        if not self.tls:
            return None
        crt = tls.material_paths(self.app.socket_path)[0]
        return crt, tls.certificate_fingerprint(crt)

    def close(self):
        """The port closes (the serve job ended): once this returns, connecting to it is refused."""
        self.app.doors.close(self.door)

    def _gate(self, head):
        """The loop's check of a request's head: None without the token, else what to send before its body."""
        if not header_is(head, b"authorization:", self.bearer):
            return None
        return CONTINUE if expects_continue(head) else b""


def _bind(host, port):
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as e:
        sock.close()
        raise TorchshError("bad_argument", "cannot listen on %s:%d: %s" % (host, port, e.strerror or e),
                           "choose another --port (0: any free one), or a --host of this machine")
    return sock


def _served_only(request):
    """The V2 and OpenAI routes (serve/openai_edge.py), and nothing else of the daemon's (404 in V2's words)."""
    if any(method == request.method and pattern.match(request.path) for method, pattern in _ROUTES):
        return None
    return _refusal("not_found", "no endpoint %s %s on this port" % (request.method, request.path),
                    "it serves the KServe V2 routes (GET /v2, POST /v2/models/NAME/infer, …) and OpenAI's (GET /v1/models, "
                    "POST /v1/chat/completions, …): docs/serve.md")


def _refusal(code, message, hint=None, json_body=True):
    """A refusal in V2's shape ({"error": …, "code"}), its connection closed; 503 says when to retry."""
    status, body, headers = batcher.failure(TorchshError(code, message, hint))
    if code == "overloaded":
        headers = dict(headers or {}, **{"Retry-After": str(RETRY_AFTER_S)})
    return edge.v2_response(status, body, headers).to_bytes(keep_alive=False)


def _tls_context(socket_path):
    """The daemon's certificate and key (made at first use), as a TLS 1.3 server context."""
    try:
        crt, key, _ = tls.ensure_material(socket_path)
    except ValueError as e:
        raise TorchshError("untrusted", "the daemon's TLS material: %s" % e,
                           "remove %s; the next use makes new ones" % " ".join(tls.material_paths(socket_path)))
    except (OSError, subprocess.SubprocessError) as e:
        raise TorchshError("not_supported", "--host beyond loopback speaks TLS, and its certificate could not "
                           "be made: %s" % e, "install openssl, or serve on 127.0.0.1 and reach it through ssh -L")
    return tls.server_context(crt, key)
