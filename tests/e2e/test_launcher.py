"""The installed `torch` launcher (shells/launcher.py) in a plain script, no `torch init bash`: a warm command
runs no program (builtins only), Ctrl-C says what the Python client says, and the stamp that spares `ls`
vouches for nothing once a loosened folder changed. tests/e2e/test_fastpath.py compares its output, errors,
exit codes, stdin lines and block forms with the Python client's and checks that argv never goes to a port
whose server did not prove the token; tests/e2e/test_trust.py plants token files as another user;
tests/e2e/test_install.py covers the wheel's copy.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from support.planted import squat
from support.pyclient import PYCLIENT
from support.waiting import wait_until

LAUNCHER = os.path.join(os.path.dirname(sys.executable), "torch")


def _traced(sh, *argv):
    """Run the launcher under `bash -px` (-p: as its shebang does): (stdout, xtrace lines, status)."""
    p = subprocess.run(["bash", "-px", LAUNCHER] + list(argv), env=sh.env, cwd=sh.folder, capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, timeout=120)
    return p.stdout, p.stderr.splitlines(), p.returncode


def test_a_warm_command_runs_no_program_and_the_folder_check_runs_once(sh):
    stamp = sh.socket[:-len(".sock")] + ".private"
    sh("torch ones 1 >/dev/null")  # the fast path on
    os.unlink(stamp)  # as on a first command: the folder's mode is read once, with `ls`
    out, trace, code = _traced(sh, "ones", "2")
    assert code == 0 and out.startswith("tensor://")
    assert [line for line in trace if "ls -ldn" in line], trace
    assert os.path.isfile(stamp)
    out, trace, code = _traced(sh, "ones", "2")
    assert code == 0 and out.startswith("tensor://")
    assert not [line for line in trace if line.startswith("++") or "ls -ldn" in line or "exec " in line], \
        [line for line in trace if line.startswith("++") or "ls" in line or "exec" in line]


def _blocked_reading_stdin(pid):
    """The process waits in read(2) on fd 0 (/proc/PID/syscall: number 0, first argument 0)."""
    try:
        with open("/proc/%d/syscall" % pid) as f:
            return f.read().split()[:2] == ["0", "0x0"]
    except OSError:
        return False


def test_ctrl_c_while_waiting_prints_the_python_clients_line_and_dies_of_sigint(sh):
    sh("torch ones 1 >/dev/null")  # the fast path on
    results = []
    for command in ([LAUNCHER, "add", "1"], PYCLIENT.split() + ["add", "1"]):
        p = subprocess.Popen(command, env=sh.env, cwd=sh.folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # `add 1` with stdin a pipe: the daemon asks for a line, which never comes; then Ctrl-C
        assert wait_until(lambda: _blocked_reading_stdin(p.pid), 60), "never read stdin"
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
        results.append((out, err, p.returncode))
    assert results[0] == results[1] == (b"", b"torch: add: interrupted\n", -signal.SIGINT)


def test_the_stamp_vouches_for_nothing_once_a_loosened_folder_changed():
    """The folder was private when the stamp was written; then it is made 0777 and the token file replaced
    (as another user could then): the folder is newer than the stamp, so the launcher reads the mode again,
    refuses the file, and the Python client refuses the folder. The port hears nothing more."""
    d = tempfile.mkdtemp(prefix="tsh-st-")
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen(8)
    heard = squat(squatter)  # proves nothing
    token, stamp = os.path.join(d, "torchd.fast"), os.path.join(d, "torchd.private")
    line = "%d %s %s\n" % (squatter.getsockname()[1], "a" * 32, "b" * 32)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHSH_", "BASH_FUNC_", "__torchsh_"))}
    env.update(TORCHSH_SOCKET=os.path.join(d, "torchd.sock"))
    try:
        with open(token, "w") as f:
            f.write(line)
        r = subprocess.run([LAUNCHER, "tensors"], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "no daemon is running" in r.stderr, r.stderr  # no proof: the client ran it
        assert heard and os.path.isfile(stamp)  # the folder was found private, and the port tried
        os.utime(stamp, (1, 1))  # written long ago: no timestamp granularity can hide what follows
        tried = len(heard)
        os.chmod(d, 0o777)
        os.replace(token, token + ".old")
        with open(token, "w") as f:
            f.write(line)
        r = subprocess.run([LAUNCHER, "randn", "[3]"], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 5, (r.returncode, r.stderr)
        first, full = r.stderr.splitlines()
        assert first == ("torch: the fast path token file %s or its folder is not yours and private; ignoring it "
                         "[untrusted]" % token)
        assert "mode 0777" in full and full.endswith("[untrusted]")
        assert len(heard) == tried
    finally:
        squatter.close()
        shutil.rmtree(d, ignore_errors=True)
