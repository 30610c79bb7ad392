"""Daemon lifecycle: auto-start (and its race), private socket, TTL expiry, stop, restart, stale sockets."""
import json
import os
import signal
import stat
import subprocess

from support.waiting import wait_until


def _daemons(folder):
    p = subprocess.run(["pgrep", "-f", "torchsh.daemon --socket %s/" % folder], capture_output=True, text=True)
    return [int(x) for x in p.stdout.split()]


def _all_threads_gone(pid):
    """Reaped, or a zombie leader alone: its files, the listening socket among them, are closed."""
    try:
        return os.listdir("/proc/%d/task" % pid) == [str(pid)] and open("/proc/%d/stat" % pid).read().split()[2] == "Z"
    except OSError:
        return True


def test_first_command_starts_the_daemon_with_private_modes(fresh_sh):
    s = fresh_sh(start=False)
    assert s("torch ones '[2]' | torch value") == "[1.0,1.0]"
    assert stat.S_IMODE(os.stat(s.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(s.socket)).st_mode) == 0o700
    assert os.path.exists(os.path.join(s.folder, "torchd.log"))


def test_two_concurrent_first_commands_start_exactly_one_daemon(fresh_sh):
    s = fresh_sh(start=False)
    out = s("torch ones '[1]' > a & torch ones '[1]' > b & torch ones '[1]' > c & wait; cat a b c")
    handles = out.split("\n")
    assert len(handles) == 3 and len({h[9:12] for h in handles}) == 1  # one epoch: one daemon
    assert len(_daemons(s.folder)) == 1


def test_status_reports_the_daemon(fresh_sh):
    s = fresh_sh()
    s("torch ones '[4]'")
    st = json.loads(s("torch daemon status --json"))
    for key in ("pid", "version", "devices", "uptime_s", "idle_s", "remaining_s", "objects", "bytes_held",
                "socket", "log"):
        assert key in st
    assert st["objects"]["tensor"] == 1 and st["bytes_held"] >= 16 and st["socket"] == s.socket
    text = s("torch daemon status")
    assert "pid:" in text and "remaining:" in text and "1 tensor" in text


def test_idle_ttl_expiry_stops_the_daemon(fresh_sh):
    s = fresh_sh(start=False)
    s("torch ones '[1]'", env={"TORCHSH_TTL": "2s"})
    assert wait_until(lambda: not os.path.exists(s.socket), 30)
    assert wait_until(lambda: not _daemons(s.folder), 10)
    assert s.run("torch daemon status").code == 5


def test_ttl_can_be_changed_at_run_time(fresh_sh):
    s = fresh_sh()
    assert s("torch daemon ttl 30m") == "ttl 30m00s"
    assert json.loads(s("torch daemon status --json"))["ttl_s"] == 1800
    s("torch daemon ttl none")
    assert json.loads(s("torch daemon status --json"))["remaining_s"] is None


def test_stop_removes_the_socket_and_restart_makes_handles_stale(fresh_sh):
    s = fresh_sh()
    h = s("torch ones '[1]'")
    s("torch daemon restart")
    assert wait_until(lambda: s.run("torch daemon status").code == 0)
    r = s.run("torch value %s" % h)
    assert r.code == 3 and "[stale_handle]" in r.err
    s("torch daemon stop")
    assert wait_until(lambda: not os.path.exists(s.socket))
    assert s.run("torch daemon status").code == 5


def test_a_stale_socket_file_is_replaced(fresh_sh):
    s = fresh_sh()
    pid = json.loads(s("torch daemon status --json"))["pid"]
    os.kill(pid, signal.SIGKILL)
    # Gone from /proc, not just from pgrep: a killed process's other threads keep its listening
    # socket open (accepting into the backlog) until the last of them has unmapped its memory.
    assert wait_until(lambda: not _daemons(s.folder) and _all_threads_gone(pid))
    assert os.path.exists(s.socket)  # left behind by the killed daemon
    assert s("torch ones '[1]' | torch value") == "[1.0]"


def test_failed_start_names_the_log(fresh_sh):
    s = fresh_sh(start=False)
    r = s.run("torch ones '[1]'", env={"TORCHSH_TTL": "soon"})
    assert r.code == 5 and "torchd.log" in r.err and len(r.err.strip().split("\n")) == 1


def test_status_and_census_answer_while_a_long_op_runs(fresh_sh):
    s = fresh_sh()
    m = s("torch randn '[2000,2000]'")  # 23 products of 2000x2000: about 1.7 s alone, longer on a busy machine
    proc = subprocess.Popen(["bash", "-c", "torch matrix_power %s 4095 >/dev/null" % m], env=s.env)
    try:
        def busy():
            st = json.loads(s("torch daemon status --json"))
            return st["busy"] is not None and st["busy"]["op"] == "matrix_power"
        assert wait_until(busy, 20), "the long op never showed as busy"
        assert proc.poll() is None, "the op finished before status answered: make it longer"
        assert json.loads(s("torch tensors --json"))
    finally:
        proc.wait(timeout=120)


def test_a_daemon_started_in_a_folder_since_removed_reads_and_writes_relative_paths_from_the_callers(fresh_sh):
    """The daemon leaves the folder of the shell that started it (numpy resolves the cwd it has): files named
    relative to another caller's folder open and save as in any other."""
    import numpy as np
    s = fresh_sh(start=False)
    started, work = os.path.join(s.folder, "started"), os.path.join(s.folder, "work")
    os.makedirs(started)
    os.makedirs(work)
    s("torch daemon start", cwd=started)
    os.rmdir(started)
    with open(os.path.join(work, "x.csv"), "w") as f:
        f.write("a,b\n1,2\n3,4\n")
    np.save(os.path.join(work, "y.npy"), np.arange(3.0))
    s("torch load x.csv >/dev/null && torch data open x.csv >/dev/null && torch load y.npy >/dev/null && "
      "torch save $(torch ones 2) z.npy && torch save $(torch ones 2) z.csv", cwd=work)
    assert np.array_equal(np.load(os.path.join(work, "z.npy")), np.ones(2, dtype=np.float32))
    assert os.path.isfile(os.path.join(work, "z.csv"))
