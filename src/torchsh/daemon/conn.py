"""A connection's state while the server reads it, and the replies the server sends on its own
(before any handler ran: limits, timeouts, framing errors, the peer check)."""
import socket

from torchsh import protocol
from torchsh.daemon import http
from torchsh.errors import TorchshError


class Conn:
    __slots__ = ("sock", "fast", "buf", "deadline", "peer_pid", "peer_uid", "authorized")

    def __init__(self, sock, fast, deadline, peer_pid=None, peer_uid=None):
        self.sock, self.fast, self.buf, self.deadline = sock, fast, bytearray(), deadline
        self.peer_pid, self.peer_uid, self.authorized = peer_pid, peer_uid, not fast

    def client_gone(self):
        """True when the peer closed its end: EOF (or an error) waits where a request would be.
        (A client that half-closes after sending its request counts as gone: HTTP clients do not.)"""
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True


def error_bytes(code, message, hint=None, json_body=False):
    """A reply for an error the server itself answers, before any handler ran. The standalone client
    prints a CLI-shaped body as its one error line and exits with Torchsh-Exit; JSON-API requests get
    the JSON error body (json_body)."""
    err = TorchshError(code, message, hint, op="daemon")
    if json_body:
        from torchsh.daemon.routes import error_response
        body, ctype = error_response(err).body, "application/json"
    else:
        body, ctype = (err.line() + "\n").encode(), "text/plain"
    headers = {protocol.H_EXIT: str(protocol.exit_status(code)), protocol.H_STDOUT: "0", "Torchsh-Error": code}
    return http.Response(protocol.http_status(code), body, ctype, headers).to_bytes(keep_alive=False)


def refuse_now(sock, data):
    """Answer a connection we will not serve, without blocking the loop, and close it."""
    try:
        if data:
            sock.send(data, socket.MSG_DONTWAIT)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    sock.close()
