"""The client's half of `torch cp H… --to CTX` and `torch session push --to CTX`: a bundle from one daemon to another.

Only the client reaches both daemons (the source's socket, and the destination's: a local daemon or a
context's forwarder), so it relays: POST /v1/bundle/export to the source, and the reply's body, as it
arrives, becomes the body of POST /v1/bundle/import at the destination (?keep=1 for a push). Bytes are
never parsed here, only counted: the bundle streams through in 1 MiB pieces, never whole in memory.
The destination answers the new handles, one a line, which are printed (with the context's name in
them, `tensor://gpu1/k3f00012`, when one is given).

Builtins only (_socket, posix, sys) plus torchsh.wire and torchsh.protocol, like client.py: trust is
checked by wire.connect before anything is sent on either socket.
"""
import sys

from torchsh import protocol
from torchsh.wire import connect, write

PIECE = 1 << 20


def run(src_sock, dst_sock, handles, keep=False, context=None, op="cp"):
    """Relay handles from the daemon on src_sock to the one on dst_sock; print the new handles; return
    the exit status (0, or an error's class after one line on stderr)."""
    try:
        src = connect(src_sock)
    except OSError as e:
        return _fail(op, "daemon_unavailable", "cannot reach the source daemon: %s" % e, None)
    try:
        body = "".join(h + "\n" for h in handles).encode()
        src.sendall(b"POST /v1/bundle/export HTTP/1.1\r\nHost: torchd\r\nConnection: close\r\n"
                    b"Content-Length: %d\r\n\r\n" % len(body) + body)
        status, length, rest = _head(src)
        if status != 200:
            return _error_reply(op, _body(src, length, rest))
        try:
            dst = connect(dst_sock)
        except OSError as e:
            return _fail(op, "daemon_unavailable", "cannot reach the destination daemon: %s" % e,
                         "`torch --context %s daemon status`" % context if context else None)
        try:
            query = b"?keep=1" if keep else b""
            dst.sendall(b"POST /v1/bundle/import%s HTTP/1.1\r\nHost: torchd\r\nConnection: close\r\n"
                        b"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % (query, length))
            _pump(src, dst, length, rest)
            status, reply_length, reply_rest = _head(dst)
            reply = _body(dst, reply_length, reply_rest)
        finally:
            dst.close()
    except (OSError, ValueError) as e:
        return _fail(op, "daemon_unavailable", "the copy was cut off: %s" % e, "nothing was held at the destination")
    finally:
        src.close()
    if status != 200:
        return _error_reply(op, reply)
    write(1, b"".join(_named(h, context) + b"\n" for h in reply.split(b"\n") if h))
    return protocol.EXIT_OK


def _named(handle, context):
    """kind://ID -> kind://CTX/ID for a context other than the default."""
    if not context or context == "default":
        return handle
    kind, sep, rest = handle.partition(b"://")
    return kind + sep + context.encode() + b"/" + rest if sep else handle


def _head(conn):
    """(status, content length, the body bytes read with the head) of an HTTP reply."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("the daemon closed the connection before replying")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return status, length, rest


def _body(conn, length, rest):
    parts, have = [rest], len(rest)
    while have < length:
        chunk = conn.recv(min(PIECE, length - have))
        if not chunk:
            raise ValueError("the reply was cut off after %d of %d bytes" % (have, length))
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts)


def _pump(src, dst, length, rest):
    """Send `length` body bytes to dst: those read with src's head, then src's, piece by piece."""
    dst.sendall(rest)
    left = length - len(rest)
    while left > 0:
        chunk = src.recv(min(PIECE, left))
        if not chunk:
            raise ValueError("the source closed the bundle with %d bytes to go" % left)
        dst.sendall(chunk)
        left -= len(chunk)


def _error_reply(op, body):
    """A daemon's JSON error {"error": {"code", "message", "hint"}} as the one line the CLI prints."""
    text = body.decode(errors="replace")
    code = _json_string(text, "code") or "internal_error"
    return _fail(op, code, _json_string(text, "message") or text[:200], _json_string(text, "hint"))


def _json_string(text, key):
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


def _fail(op, code, message, hint):
    sys.stderr.write("torch: %s: %s%s [%s]\n" % (op, message, "; " + hint if hint else "", code))
    sys.stderr.flush()
    return protocol.exit_status(code)
