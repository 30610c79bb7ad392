"""Bounded waits for the tests: a condition polled until it holds or a timeout passes, and whether a
process has exited. Use: `from support.waiting import wait_until, process_gone` (tests/ is on sys.path)."""
import time


def wait_until(cond, timeout=30.0, step=0.05):
    """True as soon as cond() is; after `timeout` seconds, cond()'s last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def process_gone(pid):
    """Exited: no such process, or a zombie (it holds no memory, socket or lock any more)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True
