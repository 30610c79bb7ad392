"""A fast-path token file planted in a folder anyone can write, naming a port we listen on, so a test
can check that nothing connects to it (the shell functions' trust rule, docs/fast-path.md); and a squatter
on a port, which proves nothing and answers every request head alike; and a pickle whose loading would
touch a marker file, for the tests that check nothing ever unpickles it."""
import contextlib
import os
import select
import shutil
import socket
import tempfile
import threading

from torchsh import protocol


@contextlib.contextmanager
def planted_fast_token(prefix):
    """Yields (tmp folder, the 0777 folder holding torchd.fast, the impostor's listening socket)."""
    d = tempfile.mkdtemp(prefix=prefix)
    shared = os.path.join(d, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    impostor = socket.socket()
    impostor.bind(("127.0.0.1", 0))
    impostor.listen(4)
    try:
        with open(os.path.join(shared, "torchd.fast"), "w") as f:
            f.write("%d %s %s\n" % (impostor.getsockname()[1], "a" * protocol.FAST_TOKEN_LEN,
                                    "b" * protocol.FAST_TOKEN_LEN))
        yield d, shared, impostor
    finally:
        impostor.close()
        shutil.rmtree(d, ignore_errors=True)


def nobody_connected(impostor):
    return select.select([impostor], [], [], 0)[0] == []


def squat(listener, reply=b""):
    """Read each connection's request head, answer `reply`, close; in a thread until `listener` is closed.
    reply None: never answer, and hold the connection open until then (a program that took the port and
    says nothing). Returns the list of heads heard, one per connection, as it grows."""
    heard, held = [], []

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                for conn in held:
                    conn.close()
                return  # closed: the test is over
            heard.append(b"")
            while b"\r\n\r\n" not in heard[-1]:  # the whole head, so the caller's writes all land
                chunk = conn.recv(65536)
                if not chunk:
                    break
                heard[-1] += chunk
            if reply is None:
                held.append(conn)
                continue
            conn.sendall(reply)
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    return heard


class MaliciousPickle:
    """Unpickling this runs `touch MARKER` (os.system): a file holding it must be refused, the marker never made."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch '%s'" % self.marker,))
