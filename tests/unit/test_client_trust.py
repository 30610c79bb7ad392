"""The client sends nothing to a socket, and writes nothing to a log, that it cannot trust.

Single-uid cases (the test plants the files itself); tests/e2e/test_trust.py covers another real
user's plants and the server's uid (SO_PEERCRED).
"""
import os
import select
import socket
import subprocess
import sys
import tempfile

import pytest

CLIENT = os.path.join(os.path.dirname(sys.executable), "torch")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSH_") and k != "XDG_RUNTIME_DIR"}
    env.update(TORCHSH_TTL="1m", **extra)
    return env


def _torch(args, **env):
    return subprocess.run([CLIENT] + args, capture_output=True, text=True, env=_env(**env), timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def folder():
    """A short private folder (AF_UNIX paths are limited to ~107 bytes); any daemon in it is stopped."""
    d = tempfile.mkdtemp(prefix="tsh-ct-")
    try:
        yield d
    finally:
        for sock in (os.path.join(d, "torchd.sock"), os.path.join(d, "xdg", "torchsh", "torchd.sock")):
            if os.path.exists(sock):  # only if a test failed: the old client started a daemon here
                _torch(["--socket", sock, "daemon", "stop"])
        subprocess.run(["rm", "-rf", d])


def _listener(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(4)
    return s


def _nobody_connected(listener):
    return select.select([listener], [], [], 0)[0] == []


def _refused(r, *words):
    assert r.returncode == 5, r
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("torch: ") and r.stderr.endswith("[untrusted]\n"), r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def test_a_socket_folder_that_others_can_write_is_refused_before_connecting(folder):
    shared = os.path.join(folder, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    listener = _listener(os.path.join(shared, "torchd.sock"))
    try:
        r = _torch(["randn", "[3]"], TORCHSH_SOCKET=os.path.join(shared, "torchd.sock"))
        _refused(r, shared, "mode 0777", "TORCHSH_SOCKET")
        assert _nobody_connected(listener)
    finally:
        listener.close()
    assert oct(os.stat(shared).st_mode & 0o7777) == oct(0o777)  # reported, never changed


def test_a_symlinked_socket_folder_is_refused(folder):
    real = os.path.join(folder, "real")
    os.mkdir(real, 0o700)
    os.symlink(real, os.path.join(folder, "link"))
    listener = _listener(os.path.join(real, "torchd.sock"))
    try:
        _refused(_torch(["--socket", os.path.join(folder, "link", "torchd.sock"), "randn", "[3]"]), "symlink")
        assert _nobody_connected(listener)
    finally:
        listener.close()


def test_a_torchd_log_symlink_is_never_followed(folder):
    victim = os.path.join(folder, "bashrc")
    with open(victim, "w") as f:
        f.write("# my shell setup\n")
    os.symlink(victim, os.path.join(folder, "torchd.log"))
    r = _torch(["--socket", os.path.join(folder, "torchd.sock"), "ones", "[1]"])
    _refused(r, "torchd.log", "symlink")
    assert open(victim).read() == "# my shell setup\n"
    assert not os.path.exists(os.path.join(folder, "torchd.sock"))  # no daemon was started


def test_a_socket_path_that_names_a_regular_file_is_refused_and_the_file_kept(folder):
    data = os.path.join(folder, "notes.txt")
    with open(data, "w") as f:
        f.write("keep me\n")
    _refused(_torch(["--socket", data, "ones", "[1]"]), data, "not a socket")
    assert open(data).read() == "keep me\n"


def test_an_xdg_runtime_dir_that_others_can_write_is_refused(folder):
    xdg = os.path.join(folder, "xdg")
    os.mkdir(xdg)
    os.chmod(xdg, 0o777)
    r = _torch(["ones", "[1]"], XDG_RUNTIME_DIR=xdg)
    _refused(r, xdg, "mode 0777")
    assert not os.path.exists(os.path.join(xdg, "torchsh", "torchd.sock"))



def test_an_exec_reply_sets_only_torchsh_variables_for_the_command(folder):
    """Even a server of ours may only set TORCHSH_* for a block's command, never PATH or LD_PRELOAD."""
    import threading
    from torchsh import protocol
    sock = os.path.join(folder, "torchd.sock")
    listener = _listener(sock)
    out = os.path.join(folder, "seen")
    body = protocol.encode_exec(["sh", "-c", 'echo "$PATH|$TORCHSH_SCOPE" > %s' % out],
                                {"PATH": "/planted", "TORCHSH_SCOPE": "s1"}, [])

    def serve():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s: 1\r\n\r\n" % (len(body), protocol.H_EXEC.encode())
                     + body)
        conn.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    r = _torch(["--socket", sock, "scope", "--", "true"])
    t.join(10)
    listener.close()
    assert r.returncode == 0, r
    with open(out) as f:
        path, scope = f.read().strip().split("|")
    assert path == os.environ["PATH"] and scope == "s1"
