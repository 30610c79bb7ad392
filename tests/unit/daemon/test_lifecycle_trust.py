"""daemon/lifecycle.py trusts only what it made or what is ours and private, and rotates its log.

One uid is enough here (planted files are made by the test itself); tests/e2e/test_trust.py covers
files planted by a second, real user.
"""
import logging
import os
import stat

import pytest

from torchsh.daemon import lifecycle


def test_a_world_writable_socket_folder_is_refused_and_its_mode_left_unchanged(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)  # like /tmp or a group folder: TORCHSH_SOCKET=$d/torchd.sock
    with pytest.raises(lifecycle.Untrusted, match="mode 1777"):
        lifecycle.ensure_private_dir(str(d))
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o1777


def test_a_missing_socket_folder_is_created_0700(tmp_path):
    d = tmp_path / "a" / "b"
    lifecycle.ensure_private_dir(str(d))
    assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700


def test_a_symlinked_socket_folder_is_refused_even_to_a_private_one(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(lifecycle.Untrusted, match="symlink"):
        lifecycle.ensure_private_dir(str(tmp_path / "link"))


def test_a_lock_file_symlink_is_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    (tmp_path / "torchd.lock").symlink_to(victim)
    with pytest.raises(lifecycle.Untrusted, match="symlink"):
        lifecycle.take_start_lock(str(tmp_path / "torchd.sock"))
    assert victim.read_bytes() == b"precious\n"


def _rotating_log(tmp_path, max_bytes):
    path = str(tmp_path / "torchd.log")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    stream = os.fdopen(fd, "w", buffering=1)
    handler = lifecycle.RotatingLog(path, max_bytes, stream=stream, fds=(fd,))
    logger = logging.Logger("torchd-test")
    logger.addHandler(handler)
    return path, logger, stream


def test_the_log_rotates_past_its_size_keeping_one_old_generation(tmp_path):
    path, logger, stream = _rotating_log(tmp_path, 1000)
    try:
        for i in range(100):  # ~3 KB in all: three rotations
            logger.warning("line %03d %s", i, "x" * 20)
    finally:
        stream.close()
    assert os.path.getsize(path) <= 1000 + 40 and os.path.getsize(path + ".1") <= 1000 + 40
    assert sorted(os.listdir(tmp_path)) == ["torchd.log", "torchd.log.1"]
    assert "line 099" in open(path).read()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_daemon_that_does_not_write_to_the_log_never_rotates_it(tmp_path):
    path = str(tmp_path / "torchd.log")
    with open(path, "w") as f:
        f.write("x" * 5000)
    r, w = os.pipe()  # stderr is a terminal or a pipe: started by hand
    try:
        handler = lifecycle.RotatingLog(path, 100, stream=os.fdopen(os.dup(w), "w"), fds=(w,))
        assert not handler.active
    finally:
        os.close(r)
        os.close(w)


def test_log_tail_gives_the_last_lines_and_refuses_a_symlink(tmp_path):
    path = tmp_path / "torchd.log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1000)))
    assert lifecycle.log_tail(str(path), 2) == b"line 998\nline 999\n"
    assert lifecycle.log_tail(str(path), 0) == b""
    (tmp_path / "other.log").symlink_to(path)
    with pytest.raises(OSError):
        lifecycle.log_tail(str(tmp_path / "other.log"), 2)

