"""The client's HTTP/1.1, builtins only: one request writer (`send`), one reply reader (`Reply`), and the one
error line a refused request becomes (`error_exit`). Every request the client makes goes through here: a
command (POST /v1/cli, wire.call), the copy relay's bundle export and import, the file relay's uploads and
downloads, the ssh forwarder's probe. Bodies stream in PIECE-sized pieces, never whole in memory unless asked.
"""
import sys

from torchsh import protocol

PIECE = 1 << 20


def send(conn, method, target, body=b"", length=None, headers=b"", close=False):
    """Write one request: its head, then `body`. With `length` given, the head announces that many body bytes
    and the caller sends them after this returns (a file or a relayed bundle). `headers`: "Name: value\\r\\n"…"""
    head = b"%s %s HTTP/1.1\r\nHost: torchd\r\n%s%sContent-Length: %d\r\n\r\n" % (
        method, target, headers, b"Connection: close\r\n" if close else b"", len(body) if length is None else length)
    conn.sendall(head + body if len(body) < PIECE else head)
    if len(body) >= PIECE:
        conn.sendall(body)


class Reply:
    """A reply's status and headers (names lower-case, values str), read when made; its body is read on demand:
    whole (body()) or piece by piece (pieces()). A connection closed early raises ConnectionError (an OSError)."""

    def __init__(self, conn):
        self.conn, buf = conn, b""
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError("the daemon closed the connection before replying")
            buf += chunk
        head, self._rest = buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        self.status = int(lines[0].split(b" ", 2)[1])
        self.headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            self.headers[name.strip().lower().decode()] = value.strip().decode(errors="surrogateescape")
        self.length = int(self.headers.get("content-length", 0))

    def pieces(self):
        """The body, piece by piece, as it arrives."""
        left = self.length
        if self._rest:
            rest, self._rest = self._rest[:left], b""
            left -= len(rest)
            yield rest
        while left > 0:
            chunk = self.conn.recv(min(PIECE, left))
            if not chunk:
                raise ConnectionError("the reply was cut off with %d of %d bytes to go" % (left, self.length))
            left -= len(chunk)
            yield chunk

    def body(self):
        return b"".join(self.pieces())


def request(conn, method, target, body=b"", headers=b"", close=True):
    """One small request and its whole reply: (Reply, body bytes)."""
    send(conn, method, target, body, headers=headers, close=close)
    reply = Reply(conn)
    return reply, reply.body()


def error_exit(op, body):
    """A daemon's JSON error {"error": {"code", "message", "hint"}} printed as the CLI's one line: its exit status."""
    text = body.decode(errors="replace")
    code = json_string(text, "code") or "internal_error"
    return error_line(op, code, json_string(text, "message") or text[:200], json_string(text, "hint"))


def error_line(op, code, message, hint):
    """`torch: OP: message; hint [code]` on stderr: its exit status."""
    sys.stderr.write("torch: %s: %s%s [%s]\n" % (op, message, "; " + hint if hint else "", code))
    sys.stderr.flush()
    return protocol.exit_status(code)


def json_string(text, key):
    """The string value of "key" in flat JSON text (no json module in the client), or None."""
    start = text.find('"%s":"' % key)
    if start < 0:
        return None
    i, out = start + len(key) + 4, []
    while i < len(text) and text[i] != '"':
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
            c = text[i]
            if c == "u":
                out.append(chr(int(text[i + 1:i + 5], 16)))
                i += 4
            else:
                out.append({"n": "\n", "t": "\t"}.get(c, c))
        else:
            out.append(text[i])
        i += 1
    return "".join(out)
