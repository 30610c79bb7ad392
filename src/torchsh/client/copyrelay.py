"""The client's half of `torch cp H… --to CTX` and `torch session push --to CTX`: a bundle from one daemon to another.

Only the client reaches both daemons (the source's socket, and the destination's: a local daemon or a
context's forwarder), so it relays: POST /v1/bundle/export to the source, and the reply's body, as it
arrives, becomes the body of POST /v1/bundle/import at the destination (?keep=1 for a push, &force=1 to move
names held there by other objects). Bytes are
never parsed here, only counted: the bundle streams through in 1 MiB pieces, never whole in memory.
The destination answers the new handles, one a line, which are printed (with the context's name in
them, `tensor://gpu1/k3f00012`, when one is given).

Builtins only, like the client (client/http.py, client/wire.py, protocol.py): trust is checked by
wire.connect before anything is sent on either socket.
"""
from torchsh import protocol
from torchsh.client import http
from torchsh.client.wire import connect, write


def run(src_sock, dst_sock, handles, keep=False, context=None, op="cp", force=False):
    """Relay handles from the daemon on src_sock to the one on dst_sock; print the new handles; return
    the exit status (0, or an error's class after one line on stderr)."""
    try:
        src = connect(src_sock)
    except OSError as e:
        return http.error_line(op, "daemon_unavailable", "cannot reach the source daemon: %s" % e, None)
    try:
        http.send(src, b"POST", b"/v1/bundle/export", "".join(h + "\n" for h in handles).encode(), close=True)
        bundle = http.Reply(src)
        if bundle.status != 200:
            return http.error_exit(op, bundle.body())
        try:
            dst = connect(dst_sock)
        except OSError as e:
            return http.error_line(op, "daemon_unavailable", "cannot reach the destination daemon: %s" % e,
                                   "`torch --context %s daemon status`" % context if context else None)
        try:
            query = b"?keep=%d&force=%d" % (keep, force)
            http.send(dst, b"POST", b"/v1/bundle/import" + query, length=bundle.length,
                      headers=b"Content-Type: application/octet-stream\r\n", close=True)
            for piece in bundle.pieces():
                dst.sendall(piece)
            reply = http.Reply(dst)
            body = reply.body()
        finally:
            dst.close()
    except OSError as e:
        return http.error_line(op, "daemon_unavailable", "the copy was cut off: %s" % e,
                               "nothing was held at the destination")
    finally:
        src.close()
    if reply.status != 200:
        return http.error_exit(op, body)
    write(1, b"".join(_named(h, context) + b"\n" for h in body.split(b"\n") if h))
    return protocol.EXIT_OK


def _named(handle, context):
    """kind://ID -> kind://CTX/ID for a context other than the default."""
    if not context or context == "default":
        return handle
    kind, sep, rest = handle.partition(b"://")
    return kind + sep + context.encode() + b"/" + rest if sep else handle
