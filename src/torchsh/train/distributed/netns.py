"""A one-node distributed fit in a network namespace of its own, where only its processes can reach its ports.

torch.distributed authenticates nothing: its TCP store and gloo/nccl accept whoever connects. rendezvous.py
binds the store to 127.0.0.1 and the ranks' sockets to `lo`, which keeps the network out, but not another
user of the same machine. So when the kernel lets us (unprivileged user namespaces), the launcher runs
under `unshare --user --map-current-user --keep-caps --net`: a private loopback, no other interface, the
same uid and files (--keep-caps: the launcher keeps CAP_NET_ADMIN of its namespace to bring `lo` up).
Where that is refused (a container's seccomp, a hardened kernel, an older unshare) the run goes on
without it; TORCHSH_DIST_ISOLATE=0 (the caller's, or the daemon's) turns it off (docs/distributed.md).
Several nodes must reach each other: never isolated.
"""
import fcntl
import functools
import os
import shutil
import socket
import struct
import subprocess
import sys

ENV_OFF = "TORCHSH_DIST_ISOLATE"   # "0": run the launcher in the daemon's own network namespace
ENV_INSIDE = "TORCHSH_FIT_NETNS"   # set for the launcher it started inside one: bring `lo` up first
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


@functools.lru_cache(maxsize=1)
def _unshare_argv():
    """The prefix that starts a process in a private user + network namespace, or None where refused. The
    probe does what the launcher will (this module's __main__ brings `lo` up and listens there)."""
    tool = shutil.which("unshare")
    if tool is None:
        return None
    argv = [tool, "--user", "--map-current-user", "--keep-caps", "--net", "--"]
    try:
        probe = subprocess.run(argv + [sys.executable, "-I", "-m", __name__], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return argv if probe.returncode == 0 else None


def isolating_argv(env):
    """[] or the unshare prefix for the launcher of a one-node run; marks env when it isolates."""
    if env.get(ENV_OFF) == "0":
        return []
    argv = _unshare_argv()
    if argv is None:
        return []
    env[ENV_INSIDE] = "1"
    return argv


def loopback_up():
    """A fresh network namespace's `lo` is down: bring it up (we hold CAP_NET_ADMIN in our namespace)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))


def inside():
    return os.environ.get(ENV_INSIDE) == "1"


if __name__ == "__main__":  # _unshare_argv's probe, inside a fresh namespace
    loopback_up()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
