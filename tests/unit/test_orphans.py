"""orphans.py: a process torchd starts ends with the daemon: the one watcher a loader's workers, fit's launcher and
its ranks use (each says what ending is)."""
import os
import subprocess
import sys
import threading

from torchsh import orphans


def test_the_end_comes_once_the_watched_process_is_gone_and_not_before():
    watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ended = threading.Event()
    try:
        orphans.end_with(watched.pid, ended.set)
        assert not ended.wait(1.5)  # it still runs: nothing ends
    finally:
        watched.kill()
        watched.wait()  # reaped: a zombie still answers kill(pid, 0)
    assert ended.wait(10)


def test_a_process_that_is_gone_is_not_alive():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert not orphans.alive(gone.pid) and orphans.alive(os.getpid())
