"""A memory cgroup of a test's own, and a daemon started in it: the kernel enforces the limit, so a request the
memory budget let through by mistake gets this daemon OOM-killed (counted: oom_kills), never another process on
the machine. Needs root with cgroup v1's memory controller, or v2 with memory delegated (CI runs as root);
elsewhere required.missing (a skip here, a failure in CI).

Use: `with daemon_in_cgroup(2 << 30, TORCHSH_MAX_MEMORY="1G") as (shell, cgroup): …`
"""
import contextlib
import os
import shutil
import signal
import tempfile
import time

from conftest import Shell, stop_daemon
from support.required import missing
from torchsh import memory


def memory_cgroup(limit):
    """A fresh child of our own memory cgroup limited to `limit` bytes, never swapping: its folder."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
        mounts = memory.budget._cgroup_mounts("/proc/self/mountinfo")
    except OSError as e:
        missing("cannot read cgroups: %s" % e)
    name = "torchsh-test-%d-%d" % (os.getpid(), time.monotonic_ns())
    for line in lines:
        hid, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        v1 = "memory" in controllers.split(",")
        if not (v1 or (hid == "0" and controllers == "")) or mounts.get("memory" if v1 else "cgroup2") is None:
            continue
        root, point = mounts["memory" if v1 else "cgroup2"]
        rel = path[len(root):] if root != "/" and path.startswith(root) else path
        child = _made_child(os.path.normpath(point + "/" + rel.lstrip("/")), name, v1, limit)
        if child is not None:
            return child
    missing("cannot create a memory cgroup here (needs root and cgroup v1 memory or v2 with memory delegated)")


def _made_child(parent, name, v1, limit):
    if not v1:
        try:
            with open(os.path.join(parent, "cgroup.subtree_control")) as f:
                if "memory" not in f.read().split():
                    return None  # v2 needs the controller enabled for children (a parent with no processes)
        except OSError:
            return None
    child = os.path.join(parent, name)
    try:
        os.mkdir(child)
    except OSError:
        return None
    try:
        with open(os.path.join(child, "memory.limit_in_bytes" if v1 else "memory.max"), "w") as f:
            f.write(str(limit))
    except OSError:
        os.rmdir(child)
        return None
    for knob, value in (("memory.swappiness", "0"), ("memory.swap.max", "0")):  # never swap
        try:
            with open(os.path.join(child, knob), "w") as f:
                f.write(value)
        except OSError:
            pass
    return child


def oom_kills(cgroup):
    """How many processes the kernel's OOM killer took in the cgroup (v1 memory.oom_control, v2 memory.events)."""
    for name in ("memory.oom_control", "memory.events"):
        try:
            with open(os.path.join(cgroup, name)) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except OSError:
            continue
    return 0


def peak_bytes(cgroup):
    """The cgroup's peak memory use so far (v1 memory.max_usage_in_bytes, v2 memory.peak), or None."""
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        try:
            with open(os.path.join(cgroup, name)) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return None


class InCgroup(Shell):
    """A Shell whose every script runs inside the cgroup: the daemon it starts inherits it, and so does one a
    command would start in its place (one that died would otherwise come back unlimited, outside it)."""

    def __init__(self, socket, folder, cgroup):
        super().__init__(socket, folder)
        self.cgroup = cgroup

    def run(self, script, **kw):
        return super().run("echo $$ > %s/cgroup.procs\n%s" % (self.cgroup, script), **kw)


@contextlib.contextmanager
def daemon_in_cgroup(limit, **env):
    """(Shell, the cgroup's folder): a daemon of its own started inside a fresh memory cgroup of `limit` bytes,
    with env (TORCHSH_MAX_MEMORY…); stopped, and the cgroup and folder removed, after."""
    cgroup = memory_cgroup(limit)
    folder = tempfile.mkdtemp(prefix="tsh-")  # short: AF_UNIX paths are limited
    shell = InCgroup(os.path.join(folder, "torchd.sock"), folder, cgroup)
    shell.env.update(env)
    try:
        shell("torch daemon start")
        yield shell, cgroup
    finally:
        stop_daemon(shell)
        _remove(cgroup)
        shutil.rmtree(folder, ignore_errors=True)


def _remove(cgroup):
    """rmdir the cgroup once it is empty; what is still in it after 20 s is this test's own daemon: ended."""
    deadline = time.time() + 20
    while True:
        try:
            os.rmdir(cgroup)
            return
        except OSError:
            if time.time() > deadline:
                break
            time.sleep(0.1)
    with open(os.path.join(cgroup, "cgroup.procs")) as f:
        for pid in f.read().split():
            os.kill(int(pid), signal.SIGKILL)
    time.sleep(0.5)
    os.rmdir(cgroup)
