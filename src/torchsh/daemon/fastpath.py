"""The fast path: a loopback TCP door into the daemon for the `torch` shell function (`torch init bash`).

Bash can open TCP connections itself (`/dev/tcp/127.0.0.1/PORT`) but not Unix sockets, so a shell
function can run `torch …` with no process per command if the daemon also listens on a loopback
port. This module is that listener's setup, token check and reply framing: a door (wire/doors.py) of the
server's loop (daemon/server.py), which accepts and reads its connections, with the same workers as the
Unix socket. It serves one thing, POST /v1/cli, through the same dispatch, and re-frames the reply so
bash can read it with two `read -N` calls. The token-bearing head must arrive within FAST_HEAD_S (5 s)
of the connection; until it has, a connection holds no slot and never a worker.

Security model (docs/fast-path.md): the port is bound to 127.0.0.1 only; a file in the private
runtime folder (mode 0600, folder 0700) holds "PORT CLIENT_TOKEN SERVER_TOKEN". Every request must
carry the client token in its head; it is checked before the body is read or anything else is
done, and a request without it gets 403 and a closed connection. Every reply carries the server
token, so the shell function never acts on a reply from another program that took the port after
torchd exited; the function even holds back the body (argv, cwd, environment) until an interim
`100 Continue` reply carrying the server token arrives. Such a program learns only the old, now
useless, client token.

Reply framing: link/fastframe.py (a context's fast door frames a remote daemon's replies the same way).
"""
import logging
import os
import secrets
import socket
import threading

import numpy as np

from torchsh import paths, protocol
from torchsh.link import fastframe
from torchsh.wire import doors

log = logging.getLogger("torchd")
TOKEN_HEADER = b"torchsh-token:"
ENV_FLAG = "TORCHSH_FASTPATH"  # in torchd's environment or a command's: turn the fast path on
FAST_CONNECTION_LIMIT = 256  # connections that showed the token; as many more may wait for theirs
FAST_HEAD_S = 5.0            # from accept to the token-bearing head
FAST_MAX_BODY = 64 << 20     # argv and stdin handles only; bulk data goes through the Unix socket

REFUSED = (b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 25\r\n"
           b"Connection: close\r\n\r\nmissing or wrong token.\r\n")
NOT_FOUND = (b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 40\r\n"
             b"Connection: close\r\n\r\nthe fast path serves POST /v1/cli only\r\n")
OVERLOADED = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 23\r\n"
              b"Retry-After: %d\r\nConnection: close\r\n\r\nfast path overloaded.\r\n" % doors.RETRY_AFTER_S)

_enable_lock = threading.Lock()


def token_file(app):
    """torchd.sock -> torchd.fast, beside the socket in the private runtime folder."""
    return paths.sibling(app.socket_path, ".fast")


def enable(app):
    """Start the loopback listener once per daemon, a door of the server's loop; later calls are no-ops.
    Returns the FastPath."""
    with _enable_lock:
        if app.fastpath is None:
            app.fastpath = FastPath(app)
            os.environ[ENV_FLAG] = "1"  # `torch daemon restart` re-execs with this environment: keep it on
            if getattr(app, "doors", None) is not None:  # None in-process: no loop serves it
                app.doors.open(app.fastpath.door())
        return app.fastpath


def disable(app):
    if app.fastpath is not None:
        app.fastpath.close()


class FastPath:
    def __init__(self, app):
        self.app = app
        self.client_token = secrets.token_hex(protocol.FAST_TOKEN_LEN // 2).encode()
        self.server_token = secrets.token_hex(protocol.FAST_TOKEN_LEN // 2).encode()
        self.framer = fastframe.Framer(self.server_token, printf_escape)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))  # loopback only: no other machine can connect
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.path = token_file(app)
        _write_private(self.path, b"%d %s %s\n" % (self.port, self.client_token, self.server_token))
        log.info("fast path on 127.0.0.1:%d (token file %s)", self.port, self.path)

    def door(self):
        """This listener as a door of the server's loop: the token in each head, POST /v1/cli only, replies
        framed for bash, one request a connection; its refusals a plain line, or none (the shell function
        then runs the real client)."""
        return doors.Door("fast", "fast path 127.0.0.1:%d" % self.port, self.listener, FAST_CONNECTION_LIMIT,
                          FAST_MAX_BODY, doors.REQUEST_S, doors.IDLE_S, _refusal, gate=self.check_head, refused=REFUSED,
                          screen=_cli_only, frame=self.reply_for_bash,
                          waiting_limit=FAST_CONNECTION_LIMIT, head_s=FAST_HEAD_S, keep_alive=False, quickack=True)

    def close(self):
        try:
            self.listener.close()
        finally:
            fastframe.remove_token_file(self.path, self.port)

    def check_head(self, head):
        """The server's loop calls this with a request head: None when the token is wrong or missing
        (answer REFUSED and close), else the bytes to send before the body (a 100 Continue, or b"")."""
        if not self.authorized(head):  # before the body is read or anything is parsed
            return None
        if doors.expects_continue(head):  # the caller waits for proof before sending argv
            return self.framer.continue_reply()
        return b""

    def authorized(self, head):
        return doors.header_is(head, TOKEN_HEADER, self.client_token)

    def reply_for_bash(self, response, request=None):
        """A CLI reply framed for the shell functions (link/fastframe.py), as the pieces to send."""
        return self.framer.reply(response.headers, response.body, streams(request))


def streams(request):
    """Whether the request's caller copies a big stdout from the connection itself (protocol.FAST_STREAM_HEADER)."""
    return request is not None and request.headers.get(protocol.FAST_STREAM_HEADER) == "1"


def _cli_only(request):
    return None if request.method == "POST" and request.path == protocol.CLI_PATH else NOT_FOUND


def _refusal(code, message, hint=None, json_body=False):
    """The fast path's refusals: 503 with Retry-After past its limits, else no reply at all (the connection
    closes; the shell function then runs the real client, which says what is wrong)."""
    return OVERLOADED if code == "overloaded" else NOT_FOUND if code == "not_found" else b""


def quickack(conn):
    """Call before each recv: acknowledge at once. Bash writes a request line by line and cannot turn
    Nagle off, so each small write waits for the previous one's ACK; a delayed ACK costs 40 ms."""
    if _QUICKACK is not None:
        conn.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)  # not sticky: set before every recv


_QUICKACK = getattr(socket, "TCP_QUICKACK", None)  # Linux
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def printf_escape(data):
    """Every byte as \\xHH, which bash's `printf %b` turns back into that byte (NUL included)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    out = np.empty((len(raw), 4), dtype=np.uint8)
    out[:, 0], out[:, 1] = ord("\\"), ord("x")
    out[:, 2], out[:, 3] = _HEX[raw >> 4], _HEX[raw & 15]
    return out.tobytes()


def _write_private(path, data):
    """Write atomically with mode 0600 from the start: the token is never readable by others."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        os.unlink(tmp)  # a leftover of an earlier daemon with our pid; the folder is verified private
    except FileNotFoundError:
        pass
    # O_EXCL|O_NOFOLLOW: a fresh file of ours, never one planted under that name or a symlink's target
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)
