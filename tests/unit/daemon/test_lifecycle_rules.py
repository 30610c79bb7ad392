"""daemon/lifecycle.py: durations, the private folder, the start lock, probe-before-bind."""
import os
import socket
import stat

import pytest

from torchsh.daemon import lifecycle


@pytest.mark.parametrize("text,seconds", [("30m", 1800), ("2h", 7200), ("90s", 90), ("1d", 86400), ("45", 45),
                                          ("none", None), ("never", None)])
def test_ttl_durations(text, seconds):
    assert lifecycle.parse_ttl(text) == seconds


def test_bad_ttl_says_how_to_write_one():
    with pytest.raises(ValueError, match="30m"):
        lifecycle.parse_ttl("soon")


def test_an_existing_folder_is_used_as_it_is_never_chmodded(tmp_path):
    d = tmp_path / "rt"
    d.mkdir(mode=0o755)
    lifecycle.ensure_private_dir(str(d))  # nobody else can write in it: fine, and left as its owner made it
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o755


def test_start_lock_admits_one_holder(tmp_path):
    sock = str(tmp_path / "d.sock")
    fd = lifecycle.take_start_lock(sock)
    with pytest.raises(lifecycle.AlreadyServing):
        lifecycle.take_start_lock(sock)
    os.close(fd)
    os.close(lifecycle.take_start_lock(sock))


def test_bind_replaces_a_dead_socket_file_and_refuses_a_live_one(tmp_path):
    sock = str(tmp_path / "d.sock")
    first = lifecycle.bind_private(sock)
    with pytest.raises(lifecycle.AlreadyServing):
        lifecycle.bind_private(sock)
    first.close()  # the file stays, nobody answers: stale
    second = lifecycle.bind_private(sock)
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
    monkeypatch.setattr(lifecycle.socket, "socket", Watched)
    listener = lifecycle.bind_private(sock)
    try:
        assert seen == [False] and stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
        assert lifecycle.probe(sock) and os.listdir(tmp_path) == ["d.sock"]
    finally:
        listener.close()


def test_a_bind_left_half_done_by_a_dead_daemon_is_cleared(tmp_path):
    left = socket.socket(socket.AF_UNIX)
    left.bind(str(tmp_path / "d.bind"))  # died before its rename: nobody listens
    left.close()
    lifecycle.bind_private(str(tmp_path / "d.sock")).close()
    assert os.listdir(tmp_path) == ["d.sock"]
