"""Another local user cannot make your `torch` run commands or grow your files through its runtime folder.

Two real uids (issue 10, Critical; tests/support/intruder.py): the intruder plants, in the /tmp-like folder
the victim falls back to, a socket folder with a server that answers with an exec directive, a torchd.log
symlink, an empty squatted folder, and a server behind the victim's own socket file (SO_PEERCRED); and the
daemon itself refuses a world-writable socket folder. Planted fast-path token files: test_trust_fast_path.py.
"""
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

from torchsh import protocol
from support.intruder import (  # noqa: F401  (intruder, other_user and tmpdir_1777 are fixtures)
    CLIENT, _heard, _planted_folder, _refused, _victim, _victim_env, _wait_for, intruder, other_user, tmpdir_1777)

# A server that records what it hears and answers every request with `reply`. argv: socket path (or
# "fd:N", a bound socket handed over, so that listen() here makes SO_PEERCRED name this uid), the
# record file, the reply in hex.
UNIX_SERVER = r"""
import os, socket, sys
where, record, reply = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
if where.startswith("fd:"):
    s = socket.socket(fileno=int(where[3:]))
else:
    s = socket.socket(socket.AF_UNIX)
    s.bind(where)
    os.chmod(where, 0o777)
s.listen(8)
open(record, "ab").close()
while True:
    c, _ = s.accept()
    c.settimeout(5)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    with open(record, "ab") as f:
        f.write(b"[connection]" + data)
    try:
        c.sendall(reply)
    except OSError:
        pass
    c.close()
"""


def _exec_reply(pwned):
    body = protocol.encode_exec(["touch", pwned], {}, [])
    return b"HTTP/1.1 200 OK\r\nTorchsh-Exec: 1\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def test_a_planted_socket_of_another_uid_is_refused_and_hears_nothing(intruder, tmpdir_1777):
    folder = _planted_folder(intruder, tmpdir_1777)
    record, pwned = os.path.join(folder, "heard"), os.path.join(tmpdir_1777, "pwned")
    intruder.serve(UNIX_SERVER, os.path.join(folder, "torchd.sock"), record, _exec_reply(pwned).hex())
    _wait_for(record)
    r = _victim([CLIENT, "randn", "[3]"], tmpdir_1777)
    _refused(r, folder, "belongs to uid %d" % intruder.uid, "XDG_RUNTIME_DIR")
    assert _heard(record) == b"" and not os.path.exists(pwned)


def test_a_server_of_another_uid_behind_our_own_socket_file_is_refused_by_its_peer_credentials(intruder, tmpdir_1777):
    """The folder and the socket file pass every check; only SO_PEERCRED tells the server's uid."""
    private = tempfile.mkdtemp(prefix="tsh-tp-")  # ours, 0700
    loot = os.path.join(tmpdir_1777, "loot")
    os.mkdir(loot)
    intruder.own(loot, 0o700)
    record, pwned = os.path.join(loot, "heard"), os.path.join(tmpdir_1777, "pwned")
    sock = os.path.join(private, "torchd.sock")
    bound = socket.socket(socket.AF_UNIX)
    try:
        bound.bind(sock)  # our file, in our folder; the intruder calls listen() on it
        intruder.serve(UNIX_SERVER, "fd:%d" % bound.fileno(), record, _exec_reply(pwned).hex(),
                       pass_fds=(bound.fileno(),))
        _wait_for(record)
        r = _victim([CLIENT, "--socket", sock, "randn", "[3]"], tmpdir_1777)
        _refused(r, sock, "runs as uid %d" % intruder.uid)
        assert _heard(record) == b"" and not os.path.exists(pwned)
    finally:
        bound.close()
        shutil.rmtree(private, ignore_errors=True)


def test_a_planted_log_symlink_never_grows_the_file_it_names(intruder, tmpdir_1777):
    folder = _planted_folder(intruder, tmpdir_1777, mode=0o777)
    bashrc = os.path.join(tmpdir_1777, "bashrc")
    with open(bashrc, "w") as f:
        f.write("# the victim's shell setup\n")
    os.symlink(bashrc, os.path.join(folder, "torchd.log"))
    intruder.own(os.path.join(folder, "torchd.log"), None)
    r = _victim([CLIENT, "ones", "[1]"], tmpdir_1777)
    _refused(r, folder)
    assert open(bashrc).read() == "# the victim's shell setup\n"
    assert not os.path.exists(os.path.join(folder, "torchd.sock"))


def test_a_squatted_fallback_folder_is_refused_loudly_not_waited_on(intruder, tmpdir_1777):
    folder = _planted_folder(intruder, tmpdir_1777, mode=0o700)
    t0 = time.monotonic()
    r = _victim([CLIENT, "ones", "[1]"], tmpdir_1777)
    _refused(r, folder, "belongs to uid %d" % intruder.uid, "XDG_RUNTIME_DIR", "TORCHSH_SOCKET")
    assert len(r.stderr.strip().split("\n")) == 1
    assert time.monotonic() - t0 < 30  # generous: the old client waited for a daemon that could never start
    assert os.listdir(folder) == []


def test_the_daemon_refuses_a_world_writable_socket_folder_and_leaves_its_mode():
    """TORCHSH_SOCKET=$d/torchd.sock with a 1777 $d: torchd used to chmod it 0700 (think of /tmp)."""
    d = tempfile.mkdtemp(prefix="tsh-td-")
    os.chmod(d, 0o1777)
    daemon = subprocess.Popen([sys.executable, "-m", "torchsh.daemon", "--socket", os.path.join(d, "torchd.sock")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=_victim_env(d))
    try:
        out, _ = daemon.communicate(timeout=60)
        assert daemon.returncode == 1, out
        assert "refusing to serve" in out and "mode 1777" in out, out
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o1777
        assert not os.path.exists(os.path.join(d, "torchd.sock"))
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
