"""privatesocket.py: the one bind of torchd's socket and a context forwarder's: a folder ours and private, the
socket 0600 and at its path only once it listens, a stale socket of ours replaced, anything else refused."""
import os
import socket
import stat

import pytest

from torchsh import privatesocket


def test_bind_replaces_a_dead_socket_file_and_refuses_a_live_one(tmp_path):
    sock = str(tmp_path / "d.sock")
    first = privatesocket.bind_private(sock)
    with pytest.raises(privatesocket.AlreadyServing):
        privatesocket.bind_private(sock)
    first.close()  # the file stays, nobody answers: stale
    second = privatesocket.bind_private(sock)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    second.close()


def test_the_socket_file_appears_only_once_it_listens(tmp_path, monkeypatch):
    """A client that sees the file (a deleted socket bound again: daemon/watch.py) connects at once: between
    bind and listen it would be refused. The file must not be at the path before listen."""
    sock, seen = str(tmp_path / "d.sock"), []

    class Watched(socket.socket):
        def listen(self, *args):
            seen.append(os.path.exists(sock))
            return super().listen(*args)
    monkeypatch.setattr(privatesocket.socket, "socket", Watched)
    listener = privatesocket.bind_private(sock)
    try:
        assert seen == [False] and stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
        assert privatesocket.probe(sock) and os.listdir(tmp_path) == ["d.sock"]
    finally:
        listener.close()


def test_a_bind_left_half_done_by_a_dead_process_is_cleared(tmp_path):
    left = socket.socket(socket.AF_UNIX)
    left.bind(str(tmp_path / "d.bind"))  # died before its rename: nobody listens
    left.close()
    privatesocket.bind_private(str(tmp_path / "d.sock")).close()
    assert os.listdir(tmp_path) == ["d.sock"]


def test_a_file_that_is_not_a_socket_is_never_unlinked_at_the_socket_path(tmp_path):
    data = tmp_path / "torchd.sock"
    data.write_bytes(b"my data\n")
    with pytest.raises(privatesocket.Untrusted, match="not a socket"):
        privatesocket.bind_private(str(data))
    assert data.read_bytes() == b"my data\n"


def test_a_folder_others_can_write_in_is_refused_and_left_as_it_is(tmp_path):
    """Anyone could swap the socket in such a folder: nothing is bound there, and its mode is its owner's."""
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)
    with pytest.raises(privatesocket.Untrusted, match="mode 1777"):
        privatesocket.bind_private(str(d / "s.sock"))
    assert os.listdir(d) == [] and stat.S_IMODE(os.stat(d).st_mode) == 0o1777
