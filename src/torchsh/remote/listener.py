"""`torchd --listen tls://ADDR:PORT`: the daemon's TLS door for remote contexts, a door of its one server loop
(wire/doors.py, daemon/server.py), not a server of its own.

Each connection: the TLS handshake (done by the loop without blocking) and the token line "torchsh-tls-1
TOKEN\\n" (link/tls.py), both within tls.HANDSHAKE_S of the accept, before any HTTP is read; a wrong token gets
"no", a log line and a closed connection. Until its line is accepted a connection holds no slot (WAITING of
them at most, PER_PEER from one address; a new one past those pushes out the oldest, which just closes).
After "ok" it is served as the Unix socket's connections are: every route, the same error shapes, 4 GiB
bodies, the same deadlines and worker pools. A remote caller has no pid here (SO_PEERCRED is the Unix
socket's): a `scope -- CMD` it opens ends when its connection drops (daemon/conn.Conn.hold).
Plain TCP is refused on every address: a port anyone can reach must not run commands as you without a
certificate and a token.
"""
import ipaddress
import socket

from torchsh.link import tls

SLOTS = 128      # connections that showed the token (past them: 503 overloaded with Retry-After)
WAITING = 128    # connections in their handshake or before their token line: they hold no slot
PER_PEER = 64    # of those, from one address (a forwarder opens a connection a command)


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
    """tls://ADDR:PORT bound, with the daemon's certificate and token (made at first start beside its socket);
    door() makes it a door of the server's loop."""

    def __init__(self, url, sock_for_material):
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
        family = socket.AF_INET6 if ":" in self.addr else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((self.addr, self.port))
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]

    def door(self, unix):
        """This listener as a door that serves as the Unix socket's door `unix` does (its routes, error shapes,
        body and time limits), with TLS, the token line and slots of its own."""
        return unix.beside("remote", "tls://%s:%d" % (self.addr, self.port), self.sock, SLOTS, tls=self.ctx,
                           preamble=self.token_line, waiting_limit=WAITING, per_peer=PER_PEER,
                           head_s=tls.HANDSHAKE_S)

    def token_line(self, line):
        """The loop's check of a connection's first line: (accepted, "ok\\n" or "no\\n")."""
        accepted = tls.token_line_ok(line, self.token)
        return accepted, tls.TOKEN_OK if accepted else tls.TOKEN_NO

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
