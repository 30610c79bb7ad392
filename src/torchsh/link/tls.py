"""TLS for remote daemons: the daemon's self-signed certificate and token, the fingerprint text, and the
two ends of a connection's first exchange.

A connection: TLS 1.3 handshake; the client checks the certificate's SHA-256 against the fingerprint its
context pins (no CA: the pin is the trust, as ssh's known_hosts); only then does it send one line
"torchsh-tls-1 TOKEN\n"; the daemon compares it (constant time) before it reads anything else, and answers
"ok\n" or "no\n" and closes. After "ok" the bytes are the daemon's HTTP, exactly as on its Unix socket.
Certificate and key come from the `openssl` command (the `cryptography` package is not a dependency).
"""
import base64
import hashlib
import hmac
import os
import secrets
import socket
import ssl
import subprocess

from torchsh import paths, trust

PREAMBLE = b"torchsh-tls-1 "
TOKEN_OK, TOKEN_NO = b"ok\n", b"no\n"  # the daemon's answers to the token line
TOKEN_BYTES = 32
HANDSHAKE_S = 10.0


class TLSRefused(Exception):
    """The other end is not who the context says (code fingerprint_mismatch), refused our token
    (token_refused), or could not be reached (daemon_unavailable)."""

    def __init__(self, code, message, hint):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


# ---- fingerprints: "SHA256:" + unpadded base64 (ssh's form); hex with or without colons is read too
def fingerprint(der):
    return "SHA256:" + base64.b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")


def parse_fingerprint(text):
    """The 32 digest bytes of a fingerprint in ssh's form (SHA256:base64) or openssl's (hex, colons)."""
    body = text.strip()
    if body.upper().startswith("SHA256:"):
        body = body[7:]
    elif body.upper().startswith("SHA256 FINGERPRINT="):
        body = body[19:]
    hexed = body.replace(":", "")
    if len(hexed) == 64 and all(c in "0123456789abcdefABCDEF" for c in hexed):
        return bytes.fromhex(hexed)
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ValueError("%r is not a SHA-256 fingerprint (SHA256:base64, or 64 hex digits)" % text[:80])
    return raw


# ---- the daemon's side
def material_paths(sock):
    """Certificate, key and token beside the daemon's socket, in its private folder."""
    return paths.sibling(sock, ".tls.crt"), paths.sibling(sock, ".tls.key"), paths.sibling(sock, ".tls.token")


def ensure_material(sock):
    """(certificate path, key path, token bytes), made at first start: the key and token 0600 in the
    private folder. An empty or unreadable token is an error (ValueError): the listener needs one."""
    crt, key, token_path = material_paths(sock)
    old = os.umask(0o077)
    try:
        if not (os.path.exists(crt) and os.path.exists(key)):
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-days", "3650", "-subj", "/CN=torchd", "-keyout", key, "-out", crt],
                           check=True, capture_output=True, timeout=60)
    finally:
        os.umask(old)
    for path in (crt, key):
        problem = trust.untrusted(path, trust.S_IFREG)
        if problem:
            raise ValueError(problem)
    return crt, key, ensure_token_file(token_path)


def ensure_token_file(path):
    """The token in PATH, made there first when there is none (O_EXCL|O_NOFOLLOW, 0600: never a file planted
    under that name, nor a symlink's target). Every door's token file: the TLS listener's, `serve --port`'s,
    `torch mcp --port`'s. ValueError when the file is not ours and private, or empty or too short."""
    if not os.path.lexists(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_hex(TOKEN_BYTES).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    problem = trust.untrusted(path, trust.S_IFREG)
    if problem:
        raise ValueError(problem)
    with open(path, "rb") as f:
        token = f.read().strip()
    if len(token) < 32:
        raise ValueError("the token file %s is empty or too short (under 32 characters)" % path)
    return token


def certificate_fingerprint(crt):
    with open(crt) as f:
        return fingerprint(ssl.PEM_cert_to_DER_cert(f.read()))


def server_context(crt, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(crt, key)
    ctx.num_tickets = 0  # no session tickets: nothing arrives after the handshake but our own bytes
    return ctx


def token_line_ok(line, token):
    """The daemon's check of a connection's first line (its server loop reads it, before any HTTP: a door's
    preamble, remote/listener.py): True when it carries our token, compared in constant time. The daemon
    answers TOKEN_OK, or TOKEN_NO and closes."""
    given = line[len(PREAMBLE):].strip() if line.startswith(PREAMBLE) else b""
    return hmac.compare_digest(given, token)


def _read_line(s, limit):
    buf = b""
    while not buf.endswith(b"\n") and len(buf) < limit:
        chunk = s.recv(limit - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


# ---- the client's side (the forwarder, `context create`)
def client_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # no CA: the pinned fingerprint is checked below, before a byte is sent
    return ctx


def split_host(url):
    """tls://HOST:PORT -> (host, port); [v6]:port too."""
    rest = url.split("://", 1)[1].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError("%s has no port: write tls://HOST:PORT" % url)
    return host.strip("[]"), int(port)


def fetch_fingerprint(url, timeout=HANDSHAKE_S):
    """The certificate fingerprint the daemon at URL shows (for `context create` without --fingerprint)."""
    s = _handshake(url, timeout)
    try:
        return fingerprint(s.getpeercert(binary_form=True))
    finally:
        s.close()


def _handshake(url, timeout):
    host, port = split_host(url)
    try:
        raw = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        raise TLSRefused("daemon_unavailable", "cannot reach the daemon at %s: %s" % (url, e.strerror or e),
                         "start it there: torchd --listen %s" % url) from None
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a request's small writes must not wait for an ACK
    try:
        s = client_context().wrap_socket(raw)
    except (OSError, ssl.SSLError) as e:
        raw.close()
        raise TLSRefused("daemon_unavailable", "TLS handshake with %s failed: %s" % (url, e),
                         "is a torchd --listen tls://… daemon on that port?") from None
    return s


def connect(url, pinned, token, timeout=HANDSHAKE_S):
    """A TLS socket to the daemon at URL, its certificate checked against PINNED and our TOKEN accepted."""
    s = _handshake(url, timeout)
    try:
        seen = s.getpeercert(binary_form=True)
        if not hmac.compare_digest(hashlib.sha256(seen).digest(), parse_fingerprint(pinned)):
            raise TLSRefused("fingerprint_mismatch", "the daemon at %s shows certificate %s, not the pinned %s"
                             % (url, fingerprint(seen), pinned),
                             "if its certificate really changed, create the context again with --fingerprint")
        try:
            s.sendall(PREAMBLE + token.encode() + b"\n")
            answer = _read_line(s, 8)
        except OSError as e:
            raise TLSRefused("daemon_unavailable", "the daemon at %s closed the connection: %s" % (url, e),
                             "see its log (torch daemon log, run there)") from None
        if not answer:  # closed before it answered: at its limits, stopping, or it took too long
            raise TLSRefused("daemon_unavailable", "the daemon at %s closed the connection before answering the "
                             "token" % url, "retry shortly; see its log (torch daemon log, run there)")
        if answer != TOKEN_OK:
            raise TLSRefused("token_refused", "the daemon at %s refused this context's token" % url,
                             "copy its token file (torchd.tls.token beside its socket) again: "
                             "torch context create NAME --host %s --token-file F" % url)
        s.settimeout(None)
        return s
    except BaseException:
        s.close()
        raise
