"""A context's fast door (client/contexts/fastdoor.py) listens on loopback, where any local user can connect:
a caller without the token gets nothing and keeps no waiting place, however slowly it writes its head."""
import os
import socket
import threading
import time

import pytest

from torchsh.client.contexts import fastdoor


@pytest.fixture
def door(tmp_path, monkeypatch):
    monkeypatch.setattr(fastdoor, "FAST_HEAD_S", 1.0)
    folder = tmp_path / "contexts"
    folder.mkdir(mode=0o700)
    d = fastdoor.FastDoor(str(folder / "r1.sock"), fastdoor.Upstream(lambda: pytest.fail("no upstream wanted")))
    threading.Thread(target=d.serve_forever, daemon=True).start()
    yield d
    d.close()


def test_the_token_file_is_private_and_names_the_loopback_port(door):
    st = os.stat(door.path)
    assert st.st_mode & 0o777 == 0o600 and st.st_uid == os.getuid()
    assert open(door.path).read().split()[0] == str(door.port)


def test_a_caller_dripping_its_head_is_cut_at_the_heads_deadline_not_each_reads(door):
    s = socket.create_connection(("127.0.0.1", door.port))
    s.settimeout(10)
    started = time.monotonic()
    closed = False
    for byte in b"POST /v1/cli HTTP/1.1\r\nTorchsh-Token: wrong":
        try:
            s.sendall(bytes([byte]))
        except OSError:
            closed = True
            break
        time.sleep(0.2)  # each read is quick; the whole head is not
        if time.monotonic() - started > 4:
            break
        s.setblocking(False)
        try:
            closed = s.recv(1) == b""
        except BlockingIOError:
            pass
        s.setblocking(True)
        if closed:
            break
    assert closed and time.monotonic() - started < 3, "the door kept a dripping caller past its head deadline"
    s.close()


def test_a_wrong_token_gets_nothing(door):
    s = socket.create_connection(("127.0.0.1", door.port))
    s.settimeout(5)
    s.sendall(b"POST /v1/cli HTTP/1.1\r\nTorchsh-Token: %s\r\nContent-Length: 0\r\n\r\n" % (b"0" * 32))
    assert s.recv(100) == b""
    s.close()
