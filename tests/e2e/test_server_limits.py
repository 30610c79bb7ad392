"""The daemon under connection pressure, long ops, resource limits, a second uid, shutdown and a
deleted socket (issue 10, "the daemon must not die, and must not stall everyone").

The long op is `torch matrix_power` of a 2000x2000 matrix to the power 2**24-1 (47 matrix products,
about 3 s on two cores); assertions are about order ("answered while the long op still ran"), not
durations, except where the issue names one (then generous).
"""
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

import pytest

from support.twouid import other_user, run_as  # noqa: F401  (other_user is a fixture)

TORCH = os.path.join(os.path.dirname(sys.executable), "torch")  # the venv's launcher, as conftest.BIN
CLIENT = [sys.executable, "-IS", TORCH]  # the Python client itself (the launcher would take the fast path)
LONG = ["matrix_power", None, "16777215"]


def bg(sh, *argv):
    return subprocess.Popen([*CLIENT, *argv], env=sh.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def status(sh):
    return json.loads(sh("torch daemon status --json"))


def wait_for(predicate, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def start_long_op(sh):
    m = sh("torch randn '[2000,2000]'")
    long = bg(sh, *[m if a is None else a for a in LONG])
    wait_for(lambda: (status(sh)["busy"] or {}).get("op") == "matrix_power", "the long op to start")
    return long


def unix_connections(sh, n):
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sh.socket)
        out.append(s)
    return out


def test_500_idle_connections_do_not_delay_torch_add(fresh_sh):
    sh = fresh_sh()
    a = sh("torch randn '[3]'")
    idle = unix_connections(sh, 500)
    try:
        t0 = time.monotonic()
        r = sh.run("torch add %s %s" % (a, a))
        took = time.monotonic() - t0
        assert r.code == 0 and r.out.startswith("tensor://"), r.err
        assert took < 2.0, "torch add took %.3fs behind 500 idle connections" % took
        assert status(sh)["connections"] >= 500
    finally:
        for s in idle:
            s.close()


def test_connection_limit_gives_the_client_a_one_line_overloaded_error(fresh_sh):
    sh = fresh_sh()
    limit = status(sh)["connection_limit"]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < limit + 64:
        pytest.skip("needs %d file descriptors; the hard limit is %d" % (limit + 64, hard))
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, limit + 64), hard))
    base = _daemon_fds(sh)
    idle = unix_connections(sh, limit)
    try:
        wait_for(lambda: _daemon_fds(sh) >= base + limit, "the daemon to accept them all")
        # The standalone client itself (through the fast bash path this would not touch the full socket).
        p = subprocess.run([*CLIENT, "randn", "[3]"], env=sh.env, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert p.returncode == 5 and p.stdout == ""
        assert p.stderr.count("\n") == 1 and "[overloaded]" in p.stderr and p.stderr.startswith("torch: "), p.stderr
    finally:
        for s in idle:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    wait_for(lambda: sh.run("torch randn '[3]'").code == 0, "the daemon to serve again")


def _daemon_fds(sh):
    pid = sh("cat %s" % sh.socket.replace(".sock", ".lock"))
    return len(os.listdir("/proc/%s/fd" % pid))


def test_fast_path_answers_while_idle_connections_without_a_token_are_open(fresh_sh):
    sh = fresh_sh()
    script = r'''
eval "$(torch init bash)"
a=$(torch randn '[3]')
read -r port _ < "${TORCHSH_SOCKET%.sock}.fast"
for i in $(seq 32); do exec {fd}<>/dev/tcp/127.0.0.1/$port; done
t0=$EPOCHREALTIME
torch add $a $a
t1=$EPOCHREALTIME
echo "took ${t0/./} ${t1/./}"
'''
    out = sh(script, timeout=60).splitlines()
    assert out[0].startswith("tensor://")
    _, t0, t1 = out[1].split()
    assert (int(t1) - int(t0)) / 1e6 < 2.0


def test_status_census_and_free_answer_while_tensor_requests_queue_behind_a_long_op(fresh_sh):
    sh = fresh_sh()
    h = sh("torch randn '[2]'")
    long = start_long_op(sh)
    queued = [bg(sh, "randn", "[4]") for _ in range(12)]  # more than there are tensor workers
    wait_for(lambda: status(sh)["queued"] >= 12, "twelve requests to queue for the tensor lock")
    assert "tensor://" in sh("torch tensors")
    sh("torch free %s" % h)
    assert status(sh)["busy"]["op"] == "matrix_power"
    assert long.poll() is None, "the long op finished before the lock-free commands were answered"
    assert long.wait(60) == 0
    assert all(p.wait(60) == 0 for p in queued)


@pytest.mark.slow
def test_op_help_runs_its_example_trials_under_the_tensor_lock_and_lock_free_help_never_waits(fresh_sh):
    """An op's help tries candidate examples with PyTorch (RNG, warning filters are process-wide), so it
    queues behind running tensor work; a lock-free verb's help answers at once."""
    sh = fresh_sh()
    long = start_long_op(sh)
    helped = bg(sh, "gelu", "--help")
    wait_for(lambda: status(sh)["queued"] >= 1, "the op's help to queue for the tensor lock")
    assert sh("torch daemon status --help").startswith("usage: torch daemon status")
    assert long.poll() is None and helped.poll() is None, "help ran beside the long op"
    assert long.wait(60) == 0 and helped.wait(60) == 0
    assert "example:" in helped.stdout.read()


def test_a_request_whose_client_left_while_queued_is_dropped_unrun(fresh_sh):
    sh = fresh_sh()
    long = start_long_op(sh)
    victim = bg(sh, "randn", "[7]")
    wait_for(lambda: status(sh)["queued"] >= 1, "the request to queue")
    victim.kill()
    victim.wait()
    assert long.wait(60) == 0
    census = json.loads(sh("torch tensors --json"))
    assert not [r for r in census if r.get("shape") == [7]], "the abandoned randn ran"
    log = open(sh.socket.replace(".sock", ".log")).read()
    assert "its client left while it waited for the tensor lock" in log


def test_a_client_that_stops_reading_a_big_reply_does_not_hold_up_other_tensor_work(fresh_sh):
    sh = fresh_sh()
    big = sh("torch zeros 2000000")  # its `value` is ~4 MB of text: far more than a socket buffer takes
    body = json.dumps({"args": [big]}).encode()
    stalled = unix_connections(sh, 1)[0]
    stalled.sendall(b"POST /v1/ops/value HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    reply = stalled.recv(1)  # the reply has started; until the add below answered, this client reads no more
    try:
        # the one tensor thread answers others at once, instead of waiting up to SEND_S for this reader...
        assert sh("torch value $(torch add $(torch ones 2) 1)") == "[2.0,2.0]"
        # ...and the stalled reader still gets its whole reply: it was not dropped to free the thread
        while b"\r\n\r\n" not in reply:
            reply += stalled.recv(1 << 16)
        head, _, got = reply.partition(b"\r\n\r\n")
        length = int(next(ln.split(b":")[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")))
        while len(got) < length and (chunk := stalled.recv(1 << 20)):
            got += chunk
        assert len(got) == length and json.loads(got)["result"] == [0.0] * 2000000
    finally:
        stalled.close()


def patient_daemon(fresh_sh):
    """A daemon whose stop grace outlasts the long op on any machine (matrix_power takes 6 s on an idle
    CI runner and 12 s on a loaded one: past the default 10 s grace the daemon rightly exits first)."""
    sh = fresh_sh(start=False)
    sh.env["TORCHSH_STOP_GRACE"] = "600"
    sh("torch daemon start")
    return sh


def test_daemon_stop_lets_the_running_op_answer_first_and_returns_once_the_daemon_has_exited(fresh_sh):
    sh = patient_daemon(fresh_sh)
    long = start_long_op(sh)
    stop = bg(sh, "daemon", "stop")

    # A lock-free probe: the daemon took the stop without waiting for the tensor lock.
    wait_for(lambda: "stopping" in sh.run("torch daemon status").err, "the daemon to take the stop")
    late = sh.run("torch randn '[2]'")  # during the grace period: a clear refusal, not a hang
    assert late.code == 5 and "stopping" in late.err and "[overloaded]" in late.err, late.err
    assert long.poll() is None and stop.poll() is None, "daemon stop waited for the tensor lock, or did not wait"
    out, err = long.communicate(timeout=600)
    assert long.returncode == 0 and out.startswith("tensor://"), err
    out, err = stop.communicate(timeout=600)
    assert stop.returncode == 0 and "stopped" in out, err
    assert not os.path.exists(sh.socket)  # gone by the time `stop` returned


@pytest.mark.slow
def test_sigterm_lets_the_running_op_answer_first(fresh_sh):
    sh = patient_daemon(fresh_sh)
    pid = status(sh)["pid"]
    long = start_long_op(sh)
    os.kill(pid, signal.SIGTERM)
    out, err = long.communicate(timeout=600)
    assert long.returncode == 0 and out.startswith("tensor://"), err
    wait_for(lambda: not os.path.exists(sh.socket), "the socket to go")


def test_deleted_socket_is_recreated_and_objects_are_kept(fresh_sh):
    sh = fresh_sh()
    h = sh("torch randn '[5]'")
    pid = status(sh)["pid"]
    os.unlink(sh.socket)
    t0 = time.monotonic()
    r = sh.run("torch tensors", timeout=30)
    assert r.code == 0 and h in r.out, r.err
    assert time.monotonic() - t0 < 10
    assert status(sh)["pid"] == pid


def test_burst_under_a_descriptor_limit_leaves_the_daemon_alive(fresh_sh):
    sh = fresh_sh()
    pid = status(sh)["pid"]
    limits = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    room = len(os.listdir("/proc/%d/fd" % pid)) + 8
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (room, limits[1]))
    try:
        burst = [bg(sh, "randn", "[2]") for _ in range(24)]
        held = unix_connections(sh, 16)
        codes = [p.wait(60) for p in burst]
        for s in held:
            s.close()
        assert set(codes) <= {0, 5}, codes  # served, or refused with a clear error; never a hang
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, limits)
    assert "accept failed" in open(sh.socket.replace(".sock", ".log")).read()  # EMFILE was hit, and lived
    assert sh("torch randn '[2]'").startswith("tensor://")
    assert status(sh)["pid"] == pid


def test_burst_under_an_address_space_limit_leaves_the_daemon_alive(fresh_sh):
    sh = fresh_sh()
    pid = status(sh)["pid"]
    limits = resource.prlimit(pid, resource.RLIMIT_AS)
    vm = next(int(line.split()[1]) for line in open("/proc/%d/status" % pid) if line.startswith("VmSize:"))
    resource.prlimit(pid, resource.RLIMIT_AS, ((vm << 10) + (64 << 20), limits[1]))  # 64 MiB to spare
    try:
        held = unix_connections(sh, 32)  # a thread per connection would need 32 stacks of 8 MiB
        burst = [bg(sh, "randn", "[2]") for _ in range(24)]
        codes = [p.wait(60) for p in burst]
        for s in held:
            s.close()
        assert 0 in codes and set(codes) <= {0, 5}, codes
    finally:
        resource.prlimit(pid, resource.RLIMIT_AS, limits)
    assert sh("torch randn '[2]'").startswith("tensor://")
    assert status(sh)["pid"] == pid


def test_a_connection_from_another_uid_is_refused(fresh_sh, other_user):
    sh = fresh_sh()
    folder = os.path.dirname(sh.socket)
    os.chmod(folder, 0o711)  # test only: let the other uid reach the socket at all
    os.chmod(sh.socket, 0o666)
    try:
        probe = ("import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                 "s.sendall(b'GET /v1/status HTTP/1.1\\r\\n\\r\\n'); sys.stdout.write(s.recv(65536).decode())")
        r = run_as(other_user, ["/usr/bin/python3", "-I", "-c", probe, sh.socket])
        assert " 403 " in r.stdout.split("\r\n")[0] and "[forbidden]" in r.stdout, r.stdout + r.stderr
        assert '"pid"' not in r.stdout
    finally:
        os.chmod(sh.socket, 0o600)
        os.chmod(folder, 0o700)
    log = open(sh.socket.replace(".sock", ".log")).read()
    assert "refused a connection from uid %d" % other_user[0] in log
    assert status(sh)["pid"]
