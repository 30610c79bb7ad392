"""Where a `torch fit … --nproc_per_node 2` run (gloo, CPU, through real bash) listens: only on loopback, in a
network namespace of its own where user namespaces are allowed (torch.distributed authenticates nothing).
"""
import ipaddress
import os

import pytest

from torchsh.train.distributed import netns
from support.ddp import fit_processes, make
from support.waiting import wait_until

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)


def listening_addresses(pid):
    """The local addresses pid's TCP sockets listen on (its own network namespace's tables)."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        with open("/proc/%d/net/%s" % (pid, table)) as f:
            for row in f.read().splitlines()[1:]:
                cols = row.split()
                if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                    found.append(ipaddress.ip_address(bytes.fromhex(cols[1].split(":")[0])[::-1]
                                                      if table == "tcp" else _ipv6(cols[1].split(":")[0])))
    return found


def _ipv6(hexaddr):
    raw = bytes.fromhex(hexaddr)  # four 32-bit words, each in host (little-endian) order
    return b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))


@pytest.mark.parametrize("isolate", ["1", "0"])
def test_while_two_ranks_train_every_listening_socket_of_the_run_is_on_loopback(sh, isolate):
    """torch.distributed authenticates nothing (and elastic's c10d rendezvous unpickles its store): the
    launcher's store and the ranks' gloo sockets must not be reachable from the network. Where user
    namespaces are allowed the run has a loopback of its own; TORCHSH_DIST_ISOLATE=0 (or a kernel that
    refuses them) leaves the loopback binding alone."""
    text, _ = make(sh)
    job = sh("export TORCHSH_DIST_ISOLATE=%s; " % isolate + text + "j=$(torch fit $m $o $L --loss mse_loss --epochs 100000 --nproc_per_node 2 --detach); "
             "for i in $(seq 1200); do torch job list | grep -q \"$j .*batch\" && break; sleep 0.05; done; echo $j",
             timeout=180)
    try:
        running = fit_processes(sh)
        addresses = {pid: listening_addresses(pid) for pid in running}
        assert len(addresses) >= 3 and any(addresses.values()), addresses  # the launcher and two ranks
        assert all(a.is_loopback for found in addresses.values() for a in found), addresses
        # where the kernel allows user namespaces, another user of this machine cannot reach them either
        namespaces = {os.readlink("/proc/%d/ns/net" % pid) for pid in running}
        if isolate == "1" and netns._unshare_argv() is not None:
            assert len(namespaces) == 1 and os.readlink("/proc/self/ns/net") not in namespaces
        else:
            assert namespaces == {os.readlink("/proc/self/ns/net")}
    finally:
        sh("torch job stop %s; torch job wait %s; true" % (job, job))
    assert wait_until(lambda: not fit_processes(sh), timeout=30)
