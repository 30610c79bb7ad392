"""The fast path's reply framing (docs/fast-path.md), shared by its two servers: torchd's own loopback door
(daemon/fastpath.py) and a context's fast door (client/contexts/fastdoor.py), which relays the shell
function's request to a remote daemon and frames that daemon's plain CLI reply the same way. Builtins only.

Framing (protocol.FAST_HEAD), fixed-width so bash reads the head in one `read -N`:
    HTTP/1.1 200 OK, Content-Length: %10d, Torchsh-Fast: SERVER_TOKEN K %11d %11d, then the body.
K is the kind: o = output (numbers: exit status, stdout length; body: stdout then stderr),
b = the same with stdout escaped for bash's `printf %b` (it holds NUL bytes, which bash variables
cannot), s = a stdout of FAST_STREAM_BYTES or more to a caller that copies it from the connection (its
head says Torchsh-Fast-Stream: 1; body: stderr, stdout as it is, the server token), and one letter per
protocol.REPLIES row the functions carry out: i = send stdin lines (first number: how many, -1 for all;
no body), x = exec directive (body: one printf-%b-escaped field per line,
see exec_lines), f = follow a job (numbers: Ctrl-C stops it (1) or not (0), length of the poll line and
stdout; body: the next poll's words on a line, then stdout, then stderr), h = handover (as o: run the
command with the real client; its stderr says why, for a function that does not know h).
"""
import os

from torchsh import protocol


class Framer:
    """Replies framed for the shell functions, each carrying SERVER_TOKEN (bytes), which proves the server."""

    def __init__(self, server_token, escape=None):
        self.server_token = server_token
        self.escape = escape or hex_escape  # torchd passes a faster one (numpy's); the forwarder has builtins only

    def continue_reply(self):
        """The interim reply that proves the server before the caller sends its body (argv, cwd, environment)."""
        return (protocol.FAST_CONTINUE % self.server_token.decode()).encode()

    def reply(self, h, body, streams=False):
        """A CLI reply (its headers h, names lower-case, and body) by its protocol.REPLIES row's letter (a row
        without one never comes here: the functions do not list it, so the daemon hands those commands over),
        as the pieces to send. A big stdout goes as it is to a caller that copies it from the connection."""
        row = next((r for r in protocol.REPLIES if r.letter and r.header in h), None)
        out_len = int(h.get(protocol.H_STDOUT, len(body)))  # an error dispatch answered: all "stdout"
        status = int(h.get(protocol.H_EXIT, protocol.EXIT_INTERNAL))
        if row is None and out_len >= protocol.FAST_STREAM_BYTES and streams:
            return self.stream(status, memoryview(body)[:out_len], bytes(body[out_len:]).replace(b"\0", b""))
        if row is None or row.letter == "h":
            out, err = body[:out_len], body[out_len:]
            if b"\0" in out:
                out = self.escape(out)
                return [self._frame("b", status, len(out), out + err.replace(b"\0", b""))]
            return [self._frame(row.letter if row else "o", status, out_len, body.replace(b"\0", b""))]
        if row.letter == "i":
            return [self._frame("i", int(h[row.header]), 0, b"")]
        if row.letter == "x":
            lines = exec_lines(body[:out_len])
            return [self._frame("x", 0, len(lines), lines)]
        stops, _, words = h[row.header].partition(" ")  # f: the next poll's words on a line, stdout, stderr
        line = words.encode() + b"\n"
        return [self._frame("f", int(stops), len(line) + out_len, line + body.replace(b"\0", b""))]

    def stream(self, status, out, err):
        """Kind s: stderr, stdout as it is (NUL bytes included: no escaping), then the server token again, which
        the caller reads after copying stdout: a connection cut short is never taken for the whole output."""
        token = self.server_token
        head = protocol.FAST_HEAD % (len(err) + len(out) + len(token), token.decode(), "s", status, len(out))
        return [head.encode() + err, out, token]

    def _frame(self, kind, num1, num2, body):
        head = protocol.FAST_HEAD % (len(body), self.server_token.decode(), kind, num1, num2)
        return head.encode() + body


def exec_lines(body):
    """An exec directive (protocol.encode_exec, NUL-separated) as lines bash can split: backslash
    and newline escaped for `printf %b`, one field per line, NUL-free by construction."""
    fields = body.split(b"\0")
    return b"".join(f.replace(b"\\", b"\\\\").replace(b"\n", b"\\n") + b"\n" for f in fields)


def hex_escape(data):
    """Every byte as \\xHH, which bash's `printf %b` turns back into that byte (NUL included)."""
    return bytes(data).hex("\\").encode().replace(b"\\", b"\\x").join((b"\\x", b"")) if data else b""


def remove_token_file(path, port):
    """Remove a fast path's token file ("PORT CLIENT_TOKEN SERVER_TOKEN") while it still names our port: a
    newer server's file is left alone."""
    try:
        with open(path, "rb") as f:
            ours = f.read().split()[:1] == [b"%d" % port]
        if ours:
            os.unlink(path)
    except OSError:
        pass
