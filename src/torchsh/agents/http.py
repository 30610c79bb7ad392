"""`torch mcp --http`: the MCP server over streamable HTTP, through the SDK's own app (MCPServer's
streamable_http_app and its session manager) served by uvicorn, on the doors every listener of the house has.

- Always: a private Unix socket beside the daemon's (torchd.sock -> torchd.mcp.sock), bound as torchd binds its
  own (privatesocket.py: the folder ours and writable by nobody else, the socket 0600 from its first moment, a
  stale one replaced only when it is a socket of ours nobody answers on). Whoever can open it is us: no token.
- With --port N: 127.0.0.1:N, every request with `Authorization: Bearer TOKEN` (tokens.py:
  the token file torchd.mcp.token, 0600 in the same folder; its path is printed on stderr at start); one
  without it gets 401 and nothing runs. Beyond loopback (--host) only as HTTPS with --tls_cert/--tls_key (`torch
  mcp`'s spelling; this process reads --tls-cert/--tls-key), the token too; otherwise untrusted_network, before
  anything listens.
- The SDK's DNS-rebinding check admits only the Host names of our own listeners (localhost and the loopback
  addresses, the --host given with TLS), and the Origins of the same names.
The listeners share one session manager, run here (each uvicorn server has its lifespan off), and stop together
on SIGINT or SIGTERM; the socket file is removed when it is still the one we bound.
"""
import contextlib
import ipaddress
import os
import signal
import socket
import sys
from dataclasses import dataclass

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from torchsh import paths, privatesocket, protocol, trust
from torchsh.agents import tokens
from torchsh.errors import TorchshError

MCP_PATH = "/mcp"
CONNECTIONS = 64        # open connections per listener; past them uvicorn answers 503
SESSIONS = 32           # MCP sessions at once (the SDK's session manager)
GRACE_S = 3.0           # a stopping server waits this long for its open streams
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass
class Listener:
    """One listening socket: where it is (for the start line), its ASGI app, its TLS files (or None)."""
    sock: socket.socket
    url: str
    app: object             # its ASGI app; before with_apps, a TCP port's (token, token file)
    tls: tuple = None       # (certificate file, key file) of an HTTPS listener
    path: str = None        # a Unix socket's file, and its identity_of when bound: removed at the end
    identity: tuple = None

    def close(self):
        """Close the socket; a Unix socket's file goes when it is still the one we bound, not a newer server's."""
        self.sock.close()
        if self.path is None:
            return
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if identity_of(st) == self.identity and not privatesocket.probe(self.path):  # ours closed: nobody answers
            os.unlink(self.path)


def socket_path(daemon_socket):
    """The MCP socket beside the daemon's: torchd.sock -> torchd.mcp.sock."""
    return paths.sibling(daemon_socket, ".mcp.sock")


def is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def check_door(host, tls_cert, tls_key):
    """Refuse a listener beyond loopback without TLS (untrusted_network), and TLS files that are not ours."""
    if (tls_cert is None) != (tls_key is None):
        raise TorchshError("usage", "--tls_cert and --tls_key go together", "give both, or neither")
    if tls_cert is None and not is_loopback(host):
        raise TorchshError("untrusted_network", "--host %s is beyond loopback: MCP there needs TLS" % host,
                           "add --tls_cert FILE --tls_key FILE (the token is asked for as well), or keep "
                           "--host 127.0.0.1 and reach it through ssh -L")
    for path in (tls_cert, tls_key):
        if path is not None:
            try:
                problem = trust.untrusted(path, trust.S_IFREG)
            except FileNotFoundError:
                raise TorchshError("file_error", "no file %s" % path, "give the PEM file's path") from None
            if problem:
                raise TorchshError("untrusted", problem, trust.UNTRUSTED_HINT)


def transport_security(port=None, host=None):
    """The SDK's DNS-rebinding settings: the Host names our listeners answer to, and Origins of the same."""
    hosts = list(LOOPBACK_NAMES)  # the Unix socket's clients name it as a local host, no port
    if port is not None:
        hosts += ["%s:%d" % (name, port) for name in LOOPBACK_NAMES]
        if host is not None and not is_loopback(host):
            hosts.append("%s:%d" % ("[%s]" % host if ":" in host else host, port))
    origins = ["%s://%s" % (scheme, h) for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def bind_unix(path):
    """(socket, its file's identity) of the private MCP socket at PATH (privatesocket's checks, 0600); busy
    when an MCP server answers there."""
    too_long = paths.socket_path_too_long(path)
    if too_long:
        raise TorchshError(paths.SOCKET_PATH_CODE, too_long, paths.SOCKET_PATH_HINT)
    try:
        sock = privatesocket.bind_private(path)
    except privatesocket.Untrusted as e:
        raise TorchshError("untrusted", str(e), trust.UNTRUSTED_HINT) from None
    except privatesocket.AlreadyServing:
        raise TorchshError("busy", "an MCP server already answers on %s" % path,
                           "use that one, or stop it first (its `torch mcp --http` process)") from None
    return sock, identity_of(os.lstat(path))


def identity_of(st):
    """Our socket file's (device, inode); a newer one may reuse the inode, but then someone answers on it."""
    return st.st_dev, st.st_ino


def bind_tcp(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise TorchshError("bad_argument", "cannot listen on %s:%d: %s" % (host, port, e.strerror or e),
                           "choose another --port") from None
    return sock


def listeners(args, daemon_socket):
    """The Unix socket's listener, and with --port the TCP one (its bearer token made or read): checked and
    bound, their apps not yet set (the app's Host check wants the bound port)."""
    host, port = getattr(args, "host", None) or "127.0.0.1", getattr(args, "port", None)
    cert, key = getattr(args, "tls_cert", None), getattr(args, "tls_key", None)
    if port is not None:
        check_door(host, cert, key)  # before anything is bound: a refused door leaves nothing behind
    unix_path = socket_path(daemon_socket)
    sock, identity = bind_unix(unix_path)
    found = [Listener(sock, "unix:%s (http://localhost%s)" % (unix_path, MCP_PATH), None, None, unix_path, identity)]
    if port is None:
        return found
    try:
        token_file = tokens.token_path(daemon_socket)
        token = tokens.ensure_token(token_file)
        sock = bind_tcp(host, port)
    except BaseException:
        found[0].close()
        raise
    shown = "[%s]" % host if ":" in host and not host.startswith("[") else host
    url = "%s://%s:%d%s" % ("https" if cert else "http", shown, sock.getsockname()[1], MCP_PATH)
    found.append(Listener(sock, "%s (Authorization: Bearer TOKEN; TOKEN is in %s)" % (url, token_file),
                          (token, token_file), (cert, key) if cert else None))
    return found


def with_apps(found, server, host):
    """Each listener's ASGI app: the SDK's streamable HTTP app, behind the bearer gate on a TCP port."""
    port = found[1].sock.getsockname()[1] if len(found) > 1 else None
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, max_sessions=SESSIONS,
                                     transport_security=transport_security(port, host))
    for listener in found:
        listener.app = app if listener.app is None else tokens.BearerGate(app, *listener.app)


class _Server(uvicorn.Server):
    """One listener's uvicorn server. The signals are serve()'s: every listener stops together."""

    def capture_signals(self):
        return contextlib.nullcontext()


def uvicorn_server(listener):
    cert, key = listener.tls or (None, None)
    config = uvicorn.Config(listener.app, lifespan="off", log_level="warning", access_log=False,
                            proxy_headers=False, server_header=False, limit_concurrency=CONNECTIONS,
                            timeout_graceful_shutdown=GRACE_S, ssl_certfile=cert, ssl_keyfile=key)
    return _Server(config)


async def serve(server, args):
    """Serve the MCPServer SERVER over streamable HTTP on its listeners until SIGINT or SIGTERM."""
    try:
        found = listeners(args, paths.socket_path(getattr(args, "socket", None)))
    except TorchshError as e:  # a refused door: one line and the code's exit status, before anything listens
        e.op = e.op or "mcp"
        sys.stderr.write(e.line() + "\n")
        raise SystemExit(protocol.exit_status(e.code)) from None
    try:
        with_apps(found, server, getattr(args, "host", None))
        servers = [uvicorn_server(listener) for listener in found]
        for listener in found:
            sys.stderr.write("torch mcp: serving MCP on %s\n" % listener.url)
        sys.stderr.flush()
        async with server.session_manager.run():
            async with anyio.create_task_group() as group:
                group.start_soon(_stop_on_signals, servers)
                async with anyio.create_task_group() as serving:
                    for listener, one in zip(found, servers):
                        serving.start_soon(one.serve, [listener.sock])
                group.cancel_scope.cancel()  # every listener has stopped: the signal watcher goes too
    finally:
        for listener in found:
            listener.close()


async def _stop_on_signals(servers):
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for _ in received:
            for one in servers:
                one.should_exit = True
            return
