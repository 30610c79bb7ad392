"""daemon/lifecycle.py: durations, the private folder, the start lock (the bind: tests/unit/test_privatesocket.py)."""
import os
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
