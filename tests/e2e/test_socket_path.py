"""A socket path too long for a Unix socket (sun_path) is refused in one line, exit 2, before anything
starts: by the client (any command, `daemon start`) and by `torchd --socket` itself (issue 23)."""
import os
import subprocess
import sys

SUN_PATH = 108  # Linux's struct sockaddr_un: a path of 107 bytes and its NUL
TORCHD = os.path.join(os.path.dirname(sys.executable), "torchd")


def _long_socket(folder):
    """A private folder whose socket path is one byte over the limit."""
    deep = os.path.join(folder, "d" * (SUN_PATH - len(folder) - len("/torchd.sock") - 1))
    os.mkdir(deep, 0o700)
    sock = os.path.join(deep, "torchd.sock")
    assert len(sock) == SUN_PATH
    return deep, sock


def _refused_in_one_line(code, err, prog):
    lines = err.strip().split("\n")
    assert code == 2 and len(lines) == 1, (code, err)
    assert lines[0].startswith(prog + ": socket path ") and "sun_path" in lines[0], lines
    assert "TORCHSH_SOCKET" in lines[0] and "XDG_RUNTIME_DIR" in lines[0] and lines[0].endswith("[too_large]")


def test_the_client_refuses_a_socket_path_over_the_unix_limit_before_starting_a_daemon(fresh_sh):
    s = fresh_sh(start=False)
    deep, sock = _long_socket(s.folder)
    for command in ("torch add 1 2", "torch daemon start", "torch --socket %s ones 2" % sock):
        r = s.run(command, env={"TORCHSH_SOCKET": sock})
        _refused_in_one_line(r.code, r.err, "torch")
    assert os.listdir(deep) == []  # no daemon started: no log, no lock
    init = s.run("command torch init bash", env={"TORCHSH_SOCKET": sock})  # a .bashrc's eval stays quiet
    assert init.code == 0 and "torch()" in init.out and init.err == "", init


def test_torchd_refuses_a_socket_path_over_the_unix_limit_in_one_line(fresh_sh):
    s = fresh_sh(start=False)
    deep, sock = _long_socket(s.folder)
    p = subprocess.run([TORCHD, "--socket", sock], capture_output=True, text=True, timeout=60)
    _refused_in_one_line(p.returncode, p.stderr, "torchd")
    assert os.listdir(deep) == []
