"""`torch serve --port P`: the V2 routes (serve/edge.py) on a TCP port, plain HTTP on a loopback address and
HTTPS beyond it.

House rules: every TCP listener wants a token, and one beyond loopback speaks only TLS. The daemon keeps the
token in a 0600 file beside its socket (torchd.serve.token, made at the first --port); each request carries
`Authorization: Bearer TOKEN`, and one without it gets 403 token_refused. On any other --host (0.0.0.0, the
machine's address) every connection is TLS 1.3 with the daemon's own certificate, the one its `--listen`
door shows (link/tls.py: self-signed, CN torchd, made at first use), so the token never crosses a network in
the clear; a client pins that certificate (curl --cacert CERT --resolve torchd:PORT:HOST). Budgets:
MAX_CONNECTIONS at once (one more gets 503 overloaded), a TLS handshake within tls.HANDSHAKE_S, a body over
edge.MAX_BODY 413, a connection silent for IDLE_S closed. A connection is a thread of its own that waits for
its reply; the model's batch loop answers it (edge's Deferred).
"""
import hmac
import os
import re
import secrets
import socket
import subprocess
import threading

from torchsh import paths, trust
from torchsh.daemon import http
from torchsh.errors import TorchshError
from torchsh.link import tls
from torchsh.remote.listener import is_loopback
from torchsh.serve import batcher, edge

MAX_CONNECTIONS = 64
IDLE_S = 30.0
_ROUTES = [(m, re.compile("^%s$" % p), h) for m, p, h, _ in edge.ROUTES]


def token_path(socket_path):
    return paths.sibling(socket_path, ".serve.token")


def ensure_token(socket_path):
    """The daemon's --port token: made once (0600, in the daemon's private folder), then read."""
    path = token_path(socket_path)
    if not os.path.lexists(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_hex(32).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    problem = trust.untrusted(path, trust.S_IFREG)
    if problem:
        raise TorchshError("untrusted", problem, "remove %s; the next --port makes a new one" % path)
    with open(path, "rb") as f:
        return f.read().strip()


class PortListener:
    def __init__(self, app, host, port):
        self.tls = None if is_loopback(host) else _tls_context(app.socket_path)
        self.app, self.token = app, ensure_token(app.socket_path)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((host, port))
            self.sock.listen(128)
        except OSError as e:
            self.sock.close()
            raise TorchshError("bad_argument", "cannot listen on %s:%d: %s" % (host, port, e.strerror),
                               "choose another --port (0: any free one)")
        self.host, self.port = host, self.sock.getsockname()[1]
        threading.Thread(target=self._accept, name="torchd-serve-port-%d" % self.port, daemon=True).start()

    def url(self):
        return "%s://%s:%d" % ("https" if self.tls else "http", "[%s]" % self.host if ":" in self.host else self.host,
                               self.port)

    def certificate(self):
        """(path, SHA-256 fingerprint) of the certificate a TLS port shows, or None on loopback."""
        if self.tls is None:
            return None
        crt = tls.material_paths(self.app.socket_path)[0]
        return crt, tls.certificate_fingerprint(crt)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed: the serve job ended
            if not self.slots.acquire(blocking=False):
                _send(conn, _refusal("overloaded", "%d connections are open on this port" % MAX_CONNECTIONS))
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            if self.tls is not None:
                conn.settimeout(tls.HANDSHAKE_S)
                conn = self.tls.wrap_socket(conn, server_side=True)
            conn.settimeout(IDLE_S)
            buf = bytearray()
            while (request := _read(conn, buf)) is not None:
                keep = request.keep_alive
                _send(conn, self._answer(request).pieces(keep))
                if not keep:
                    break
        except http.HTTPError as e:
            _send(conn, _refusal(e.code, str(e)))
        except OSError:
            pass  # the client left, or was silent for IDLE_S
        finally:
            conn.close()
            self.slots.release()

    def _answer(self, request):
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode("latin-1"), b"Bearer " + self.token):
            return _refusal("token_refused", "this port wants the header Authorization: Bearer TOKEN",
                            "TOKEN is in %s" % token_path(self.app.socket_path))
        for method, pattern, handler in _ROUTES:
            match = pattern.match(request.path)
            if match and method == request.method:
                reply = handler(self.app, request, match.groupdict())
                return _wait(reply) if isinstance(reply, http.Deferred) else reply
        return _refusal("not_found", "no endpoint %s %s" % (request.method, request.path))


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


def _read(conn, buf):
    """The connection's next whole request, or None at its end."""
    while (parsed := http.parse_request(buf, edge.MAX_BODY)) is None:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return None
        buf += chunk
    request, used = parsed
    del buf[:used]
    return request


def _wait(deferred):
    """The Deferred reply, waited for on this connection's own thread."""
    done, out = threading.Event(), []
    deferred.attach(lambda response: (out.append(response), done.set()))
    done.wait()
    return out[0]


def _refusal(code, message, hint=None):
    return edge.v2_response(*batcher.failure(TorchshError(code, message, hint)))


def _send(conn, pieces):
    try:
        for piece in pieces if isinstance(pieces, list) else pieces.pieces(False):
            conn.sendall(piece)
    except OSError:
        pass
