"""`torchd --listen tls://ADDR:PORT`: the daemon's TLS door for remote contexts.

Each connection: TLS handshake and the token line (tls.accept_token) before any HTTP is read; a wrong
token gets "no", a log line and a closed connection. An accepted connection is joined to the daemon's own
Unix socket (relay.pump), so it is served exactly as a local one: same request path, same limits and
timeouts, same worker pools (daemon/server.py). Plain TCP is refused on every address: a port anyone can
reach must not run commands as you without a certificate and a token.
"""
import ipaddress
import logging
import socket
import threading

from torchsh.link import relay, tls

log = logging.getLogger("torchd")
MAX_CONNECTIONS = 128  # open TLS connections; one more is closed at once (the Unix socket has its own limit)


def parse_listen(url):
    """tls://ADDR:PORT -> (addr, port); ValueError saying why anything else is refused."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "tcp":
        raise ValueError("torchd does not listen on plain TCP (%s): whoever reaches the port could run "
                         "commands as you; use tls://ADDR:PORT (a certificate and a token)" % url)
    if scheme != "tls":
        raise ValueError("cannot listen on %r: write tls://ADDR:PORT, e.g. tls://127.0.0.1:7443" % url)
    return tls.split_host(url)


def is_loopback(addr):
    if addr == "localhost":
        return True
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


class TLSListener:
    def __init__(self, url, unix_path, sock_for_material):
        self.url = url
        self.addr, self.port = parse_listen(url)
        try:
            crt, key, self.token = tls.ensure_material(sock_for_material)
        except (ValueError, OSError) as e:
            where = "" if is_loopback(self.addr) else " (a non-loopback address)"
            raise ValueError("refusing to listen on %s%s without a token: %s" % (url, where, e)) from None
        self.fingerprint = tls.certificate_fingerprint(crt)
        self.token_file = tls.material_paths(sock_for_material)[2]
        self.ctx = tls.server_context(crt, key)
        self.unix_path = unix_path
        family = socket.AF_INET6 if ":" in self.addr else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((self.addr, self.port))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def start(self):
        threading.Thread(target=self._accept_loop, name="tls-accept", daemon=True).start()
        return self

    def _accept_loop(self):
        while True:
            try:
                raw, peer = self.sock.accept()
            except OSError:
                return  # closed at exit
            if not self.slots.acquire(blocking=False):
                log.warning("tls: refused %s: %d connections are open", peer[0], MAX_CONNECTIONS)
                raw.close()
                continue
            threading.Thread(target=self._serve, args=(raw, peer), name="tls-conn", daemon=True).start()

    def _serve(self, raw, peer):
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            raw.settimeout(tls.HANDSHAKE_S)
            try:
                s = self.ctx.wrap_socket(raw, server_side=True)
                ok = tls.accept_token(s, self.token)
            except (OSError, ValueError) as e:
                log.info("tls: handshake with %s failed: %s", peer[0], e)
                raw.close()
                return
            if not ok:
                log.warning("tls: refused %s: wrong token", peer[0])
                s.close()
                return
            s.settimeout(None)
            local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                local.connect(self.unix_path)
            except OSError as e:
                log.warning("tls: cannot reach our own socket %s: %s", self.unix_path, e)
                local.close()
                s.close()
                return
            relay.pump(s, local)
        finally:
            self.slots.release()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
