"""The fast path's big outputs (kind s, daemon/fastpath.py): a stdout of protocol.FAST_STREAM_BYTES or more is
copied from the connection by `head -c`, not through bash variables, for the function and the launcher. It is
byte for byte the Python client's (text and binary), a reader that leaves early is not an error, and a
connection cut before the server token that closes the stream is "lost", never taken for the whole output."""
import os
import socket
import threading

import pytest
import torch
from support.pyclient import PYCLIENT

from torchsh import protocol
from torchsh.shells.init_bash import script

INIT = 'eval "$(torch init bash)"\n'
WAYS = {"function": INIT, "launcher": ""}

# Each test names its way itself (the function, the launcher) and one serves a fake daemon for one request:
# under the fast-path pass's prelude `torch` would be the prelude's function in both. The first pass runs them.
pytestmark = pytest.mark.skipif(bool(os.environ.get("TORCHSH_TEST_PRELUDE")),
                                reason="its ways are its own: run by the suite's first pass")


@pytest.mark.parametrize("way", WAYS)
def test_a_big_json_output_is_the_python_clients_byte_for_byte(sh, way):
    a = sh.put(torch.randn(50_000))  # ~500 KB of JSON: over FAST_STREAM_BYTES
    fast, real = sh.tmp("fast.json"), sh.tmp("real.json")
    r = sh.run(WAYS[way] + "torch value %s > %s; echo $?; %s value %s > %s" % (a, fast, PYCLIENT, a, real))
    assert r.out == "0\n" and r.err == ""
    assert os.path.getsize(real) >= protocol.FAST_STREAM_BYTES
    assert open(fast, "rb").read() == open(real, "rb").read()


@pytest.mark.parametrize("way", WAYS)
def test_a_big_binary_output_is_byte_exact(sh, way):
    a = sh.put(torch.arange(40_000, dtype=torch.float32))  # npy bytes with NUL and 0x80+, 160 KB
    fast = sh.tmp("fast.npy")
    sh(WAYS[way] + "torch value %s --format npy > %s" % (a, fast))
    with open(fast, "rb") as f:
        import numpy as np
        assert np.array_equal(np.load(f), torch.arange(40_000, dtype=torch.float32).numpy())


@pytest.mark.parametrize("way", WAYS)
def test_a_reader_that_leaves_early_is_not_a_failure(sh, way):
    a = sh.put(torch.randn(50_000))
    r = sh.run(WAYS[way] + "torch value %s | head -c 5; echo \" ${PIPESTATUS[0]}\"" % a)
    real = sh.run("%s value %s | head -c 5; echo \" ${PIPESTATUS[0]}\"" % (PYCLIENT, a))
    assert (r.out, r.err) == (real.out, real.err) and r.out.endswith(" 0\n")


@pytest.mark.parametrize("way", WAYS)
def test_a_stream_cut_short_is_a_lost_daemon_not_a_whole_output(fresh_sh, way):
    """A server with the right tokens announces 200000 bytes of stdout and closes after 1000: exit 5."""
    s = fresh_sh(start=False)
    listener, served = _cutting_server(s)
    function = script() + "\n" if way == "function" else ""  # not `torch init bash`: the server answers once
    try:
        r = s.run(function + "torch value x > out.json; echo \"exit $?\"", timeout=60)
    finally:
        listener.close()
    assert served, "the command never reached the fast path"
    assert r.out.strip().endswith("exit 5")
    assert "lost the daemon mid-request" in r.err


def _cutting_server(s):
    """A fast-path server for s's token file that proves itself, then cuts a stream reply short."""
    client, server = "c" * protocol.FAST_TOKEN_LEN, "d" * protocol.FAST_TOKEN_LEN
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    token_file = s.socket[:-len(".sock")] + ".fast"
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, b"%d %s %s\n" % (listener.getsockname()[1], client.encode(), server.encode()))
    os.close(fd)
    served = []

    def serve():
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            head, _, rest = buf.partition(b"\r\n\r\n")
            assert b"torchsh-fast-stream: 1" in head.lower()
            conn.sendall((protocol.FAST_CONTINUE % server).encode())
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(rest) < length:
                rest += conn.recv(65536)
            served.append(rest)
            out = 200_000
            conn.sendall((protocol.FAST_HEAD % (out + len(server), server, "s", 0, out)).encode() + b"[" * 1000)
    threading.Thread(target=serve, daemon=True).start()
    return listener, served
