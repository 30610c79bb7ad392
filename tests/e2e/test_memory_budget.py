"""Memory admission control end to end: an op whose output would not fit is refused with out_of_memory
(exit 4) before it allocates, and the daemon and every handle live on. Nothing here allocates more
than ~100 MB for real: the refused sizes are never allocated, and the allocation-failure test runs
under an address-space limit on the test's own daemon."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import torch

from support.cgroups import daemon_in_cgroup, oom_kills
from torchsh.api.status import status_text

GiB = 1 << 30


def start(fresh_sh, **env):
    s = fresh_sh(start=False)
    s.env.update(env)
    s("torch daemon start")
    return s


def status(s):
    return json.loads(s("torch daemon status --json"))


def refused(r, *words):
    assert r.code == 4, (r.code, r.err)
    assert "[out_of_memory]" in r.err and "torch tensors" in r.err and "torch free" in r.err, r.err
    for w in words:
        assert w in r.err, r.err


def test_factories_over_the_budget_are_refused_and_handles_survive(fresh_sh):
    s = start(fresh_sh, TORCHSH_MAX_MEMORY="512M")
    a = s("torch randn '[1000]'")
    before = s.fetch(a)
    pid = status(s)["pid"]
    for op in ("zeros", "empty", "ones", "randn"):
        refused(s.run("torch %s '[30000,30000]'" % op), "%s:" % op, "3.4 GiB", "512.0 MiB")
    refused(s.run("torch full '[20000,20000]' 1.5"), "1.5 GiB")
    refused(s.run("torch arange 0 1 1e-9"), "3.7 GiB")
    assert torch.equal(s.fetch(a), before)
    st = status(s)
    assert st["pid"] == pid and st["memory_refused"] == 6
    assert s("torch shape $(torch zeros '[1000,1000]')") == "[1000,1000]"  # 4 MB fits


def test_small_inputs_with_a_big_output_are_refused_but_views_are_not(fresh_sh):
    s = start(fresh_sh, TORCHSH_MAX_MEMORY="512M")
    refused(s.run("x=$(torch randn '[100000]'); torch outer $x $x"), "outer:", "37.3 GiB")
    refused(s.run("torch repeat $(torch randn '[3]') '[100000,1000]'"), "repeat:", "1.1 GiB")
    refused(s.run("torch add $(torch randn '[100000,1]') $(torch randn '[1,100000]')"), "add:")
    refused(s.run("torch nn linear 100000 100000"), "37.3 GiB")
    # a view allocates nothing: a 111 GiB expand of 12 bytes is fine; copying it is not
    v = s("torch expand $(torch randn '[3]') '[100000,100000,3]'")
    assert s("torch shape %s" % v) == "[100000,100000,3]"
    refused(s.run("torch contiguous %s" % v), "111.8 GiB")
    refused(s.run("torch reshape %s '[-1]'" % v), "111.8 GiB")
    refused(s.run("torch value %s" % v), "value:")  # its text would take terabytes
    big = s.tmp("big.npy")
    with open(big, "wb") as f:
        f.truncate(GiB)  # sparse: no disk, no memory; refused on its size before a byte is read
    refused(s.run("torch load %s" % big), "load:", "1.0 GiB")
    # `data open` reads a CSV whole (a .npy it maps: the same 1 GiB file opens, costing nothing held)
    big_csv = s.tmp("big.csv")
    with open(big_csv, "wb") as f:
        f.truncate(GiB)
    refused(s.run("torch data open %s" % big_csv), "data open:", "1.0 GiB")
    assert s("torch add $(torch ones '[2]') 1 | torch value") == "[2.0,2.0]"


def test_status_shows_memory_against_the_budget_connections_the_running_op_and_the_queue(fresh_sh):
    s = start(fresh_sh, TORCHSH_MAX_MEMORY="512M")
    st = status(s)
    assert st["memory_budget_bytes"] == 512 << 20 and st["memory_budget_rule"] == "512M"
    assert 0 < st["rss_bytes"] < st["memory_budget_bytes"] and st["bytes_held"] == 0
    open_now = st["connections"] + (st["fast_connections"] or 0)  # this very request, on either door
    assert open_now >= 1 and st["connection_limit"] >= st["connections"] and st["queued"] == 0
    text = s("torch daemon status")
    for line in ("memory (rss):", "of a 512.0 MiB budget", "budget:       512M", "connections:", "busy:         no",
                 "queue:        0 waiting for the tensor lock"):
        assert line in text, text
    # a long op holds the tensor lock; a second op waits behind it: status answers and shows both
    big = s("torch randn '[3000,3000]'")
    small = s("torch ones '[2]'")
    loop = "for i in $(seq 30); do torch free $(torch matmul %s %s); done" % (big, big)  # ~0.1-1 s each
    long_op = subprocess.Popen(["bash", "-c", loop], env=s.env, cwd=s.folder)
    waiter, seen = None, None
    try:
        deadline = time.time() + 60
        while time.time() < deadline and long_op.poll() is None:
            st = status(s)
            running = st["busy"] is not None and st["busy"]["op"] == "matmul"
            if running and waiter is None:
                waiter = subprocess.Popen(["bash", "-c", "torch add %s %s >/dev/null" % (small, small)],
                                          env=s.env, cwd=s.folder)
            elif running and st["queued"] >= 1:
                seen = st
                break
            time.sleep(0.01)
    finally:
        long_op.kill()  # the matmul in flight finishes on its own
        long_op.wait(timeout=60)
        if waiter is not None:
            waiter.wait(timeout=120)
    assert seen is not None, "never saw matmul running with a request queued"
    assert seen["busy"]["for_s"] >= 0
    text = status_text(seen)  # the text form of that moment
    assert "busy:         matmul for " in text and "queue:        %d waiting" % seen["queued"] in text


def test_an_allocation_failure_is_out_of_memory_and_the_daemon_lives(fresh_sh):
    """With no budget, the op runs and malloc fails (address-space limit): the failure is caught."""
    if not shutil.which("prlimit"):
        pytest.skip("needs prlimit (util-linux)")
    s = start(fresh_sh, TORCHSH_MAX_MEMORY="none")
    a = s("torch randn '[100]'")
    before = s.fetch(a)
    pid = status(s)["pid"]
    with open("/proc/%d/status" % pid) as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    # soft limit only (the hard one stays, so it could be raised again); 1 GiB of room for threads and arenas
    subprocess.run(["prlimit", "--pid", str(pid), "--as=%d:" % (vm + GiB)], check=True)
    refused(s.run("torch zeros '[30000,30000]'"), "could not allocate 3.4 GiB")
    assert torch.equal(s.fetch(a), before)
    assert status(s)["pid"] == pid


def test_a_bad_max_memory_is_refused_at_start(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSH_")}
    r = subprocess.run([sys.executable, "-m", "torchsh.daemon", "--socket", str(tmp_path / "d.sock"),
                        "--max-memory", "lots"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "not a size" in r.stderr


# -- the scenario: a 2 GiB memory cgroup ----------------------------------------------------
def test_zeros_in_a_2gib_cgroup_is_refused_and_every_handle_survives():
    with daemon_in_cgroup(2 * GiB) as (s, cgroup):
        st = status(s)
        with open("/proc/%d/cgroup" % st["pid"]) as f:
            assert os.path.basename(cgroup) in f.read()
        assert st["memory_budget_bytes"] == GiB and "cgroup" in st["memory_budget_rule"]  # the default: 50%
        handles = [s("torch randn '[1000]'"), s("torch arange 10"), s("torch nn linear 4 2")]
        before = [s.fetch(h) for h in handles[:2]]
        refused(s.run("torch zeros '[30000,30000]'"), "3.4 GiB", "1.0 GiB")
        refused(s.run("torch empty '[30000,30000]'"), "3.4 GiB")
        assert [torch.equal(s.fetch(h), b) for h, b in zip(handles, before)] == [True, True]
        assert s("torch forward %s $(torch ones '[1,4]') | torch shape" % handles[2]) == "[1,2]"
        assert status(s)["pid"] == st["pid"] and oom_kills(cgroup) == 0


def test_a_request_body_over_the_budget_is_refused_when_its_head_arrives(fresh_sh):
    """A body is held whole before its handler runs: one that could not fit is refused at once, not after
    gigabytes were read (the client here sends the head alone and gets the answer)."""
    import socket as socketlib
    s = start(fresh_sh, TORCHSH_MAX_MEMORY="1G")
    a = s("torch tensor '[1.5, 2]'")
    with socketlib.socket(socketlib.AF_UNIX) as conn:
        conn.settimeout(20)
        conn.connect(s.socket)
        conn.sendall(b"POST /v1/tensors HTTP/1.1\r\nHost: torchd\r\nContent-Type: application/octet-stream\r\n"
                     b"Content-Length: %d\r\n\r\n" % (3 * GiB))
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 ") and b" 200 " not in head.split(b"\r\n")[0], head
    err = json.loads(body)["error"]
    assert err["code"] == "out_of_memory" and "request body of 3.0 GiB" in err["message"], err
    assert s("torch value %s" % a) == "[1.5,2.0]"  # the daemon lives on, its objects too
    assert status(s)["memory_refused"] == 1


def test_loading_a_small_png_that_decodes_past_the_budget_is_refused_before_it_is_decoded(fresh_sh):
    """A 12000×12000 RGBA PNG of one colour compresses to under a megabyte and decodes to 549 MiB: the
    budget must judge the pixels its header announces, not the file's size."""
    from PIL import Image
    s = start(fresh_sh, TORCHSH_MAX_MEMORY="512M")
    path = s.tmp("flat.png")
    Image.new("RGBA", (12000, 12000)).save(path)
    assert os.path.getsize(path) < 8 << 20
    refused(s.run("torch load %s" % path), "load:")
    small = s.tmp("small.png")
    Image.new("RGB", (30, 20)).save(small)
    assert s("torch shape $(torch load %s)" % small) == "[3,20,30]"
