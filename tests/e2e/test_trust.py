"""Another local user cannot make your `torch` run commands, read your argv or grow your files.

Two real uids (issue 10, Critical): as root, tests/support/twouid.py provides a throwaway system user, the
"intruder", that plants what a second user of a shared machine could plant in a /tmp-like folder
(TMPDIR points at a fresh 1777 folder, so the victim's fallback runtime folder is $TMPDIR/torchsh-0):
a socket folder with a server that answers with an exec directive, a fast-path token file naming its
own port, a torchd.log symlink, an empty squatted folder, and a server behind the victim's own socket
file (SO_PEERCRED). The victim is the test's uid running the real client, the bash/zsh functions and the
installed launcher.
Every planted server is a process of this module, killed at the end; twouid deletes the user.
"""
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from torchsh import protocol
from torchsh.shells import init_bash, init_zsh
from support.planted import nobody_connected, planted_fast_token
from support.twouid import other_user  # noqa: F401  (a fixture)

BIN = os.path.dirname(sys.executable)
CLIENT = os.path.join(BIN, "torch")
SYSTEM_PYTHON = "/usr/bin/python3"  # the intruder cannot enter root's virtualenv; the stdlib is enough

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

# The fast path's impostor: proves itself with the planted server token, then answers with `reply`.
FAST_SERVER = r"""
import os, socket, sys
record, cont, reply = sys.argv[1], bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
with open(record + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(record + ".tmp", record + ".port")
open(record, "ab").close()
while True:
    c, _ = s.accept()
    c.settimeout(5)
    data = b""
    try:
        data += c.recv(65536)
        c.sendall(cont)
        data += c.recv(65536)
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


class Intruder:
    def __init__(self, name, uid, gid):
        self.name, self.uid, self.gid = name, uid, gid
        self.procs = []

    def own(self, path, mode):
        """Make `path` the intruder's, as if the intruder had made it."""
        os.lchown(path, self.uid, self.gid)
        if not os.path.islink(path):
            os.chmod(path, mode)

    def serve(self, script, *args, pass_fds=()):
        p = subprocess.Popen([SYSTEM_PYTHON, "-c", script] + list(args), user=self.uid, group=self.gid,
                             extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"}, pass_fds=pass_fds,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
        self.procs.clear()


@pytest.fixture(scope="module")
def intruder(other_user):
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip("needs %s to run the second user's servers" % SYSTEM_PYTHON)
    uid, gid = other_user
    who = Intruder(pwd.getpwuid(uid).pw_name, uid, gid)
    try:
        yield who
    finally:
        who.stop()


@pytest.fixture
def tmpdir_1777(intruder):
    """A fresh stand-in for /tmp (mode 1777, short path); the victim's TMPDIR points at it."""
    d = tempfile.mkdtemp(prefix="tsh-tr-")
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        intruder.stop()
        shutil.rmtree(d, ignore_errors=True)


def _victim_env(tmp, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSH_") and k != "XDG_RUNTIME_DIR"}
    env.update(TMPDIR=tmp, PATH=BIN + os.pathsep + env.get("PATH", ""), TORCHSH_TTL="1m", **extra)
    return env


def _victim(args, tmp, **extra):
    """The victim's command, bounded: a hang is a failure, not a stuck suite."""
    return subprocess.run(args, capture_output=True, text=True, env=_victim_env(tmp, **extra), timeout=60,
                          stdin=subprocess.DEVNULL, cwd=tmp)


def _planted_folder(intruder, tmp, mode=0o755):
    """The victim's predictable fallback folder, made first by the intruder."""
    folder = os.path.join(tmp, "torchsh-%d" % os.getuid())
    os.mkdir(folder)
    intruder.own(folder, mode)
    return folder


def _wait_for(path, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "the planted server never came up"
        time.sleep(0.02)


def _exec_reply(pwned):
    body = protocol.encode_exec(["touch", pwned], {}, [])
    return b"HTTP/1.1 200 OK\r\nTorchsh-Exec: 1\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def _heard(record):
    """What the planted server received, beyond the bare fact of a connection."""
    with open(record, "rb") as f:
        return f.read().replace(b"[connection]", b"")


def _refused(r, *words):
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "[untrusted]" in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


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


# The fast path's callers: the shell functions, and the installed launcher (`torch` itself, no function).
SHELLS = [("bash", init_bash.script)] + ([("zsh", init_zsh.script)] if shutil.which("zsh") else []) + [("launcher", None)]


def _fast_path_victim(shell, script, tmp, **extra):
    """The victim's `torch randn '[3]'` through the shell function (its text sourced), or the launcher."""
    if script is None:
        return _victim([CLIENT, "randn", "[3]"], tmp, **extra)
    functions = os.path.join(tmp, "functions." + shell)
    with open(functions, "w") as f:
        f.write(script())
    return _victim([shell, "-c", "source %s; torch randn '[3]'" % functions], tmp, **extra)


@pytest.mark.parametrize("shell,script", SHELLS, ids=[s for s, _ in SHELLS])
def test_a_planted_fast_path_token_file_never_gets_our_argv(intruder, tmpdir_1777, shell, script):
    folder = _planted_folder(intruder, tmpdir_1777)
    record, pwned = os.path.join(folder, "heard"), os.path.join(tmpdir_1777, "pwned")
    stok = "b" * protocol.FAST_TOKEN_LEN
    body = ("0\n0\ntouch\n%s\n" % pwned).encode()
    cont = (protocol.FAST_CONTINUE % stok).encode()
    reply = (protocol.FAST_HEAD % (len(body), stok, "x", 0, len(body))).encode() + body
    intruder.serve(FAST_SERVER, record, cont.hex(), reply.hex())
    _wait_for(record + ".port")
    token = os.path.join(folder, "torchd.fast")
    with open(token, "w") as f:
        f.write("%s %s %s\n" % (open(record + ".port").read(), "a" * protocol.FAST_TOKEN_LEN, stok))
    intruder.own(token, 0o644)
    r = _fast_path_victim(shell, script, tmpdir_1777)
    _refused(r, token)
    assert _heard(record) == b"" and not os.path.exists(pwned)


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


@pytest.mark.parametrize("shell,script", SHELLS, ids=[s for s, _ in SHELLS])
def test_a_token_file_in_a_folder_others_can_write_is_ignored_by_the_shell_function(shell, script):
    """One uid: the file and folder are ours, but the folder's mode would let anyone plant the file."""
    with planted_fast_token("tsh-tw-") as (d, shared, impostor):
        r = _fast_path_victim(shell, script, d, TORCHSH_SOCKET=os.path.join(shared, "torchd.sock"))
        _refused(r, "torchd.fast", "mode 0777")  # the function's line, then the client's full reason
        assert nobody_connected(impostor)
