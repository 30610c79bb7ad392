"""`pip install` of a built wheel puts working `torch` and `torchd` on PATH, with the fast launcher.

The wheel is built from a copy of this tree (pip wheel --no-deps --no-build-isolation: nothing is
downloaded) and installed into a fresh venv; a .pth file there makes this test venv's PyTorch, numpy
and safetensors importable, as `pip install torch` would. Commands run through real bash against a
private daemon (TORCHSH_SOCKET in a 0700 folder), which every test stops.
"""
import os
import shutil
import site
import subprocess
import sys
import tempfile
import zipfile

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_INPUTS = ("pyproject.toml", "README.md", "src", "scripts/launchers")


def _run(argv, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)
    assert p.returncode == 0, "%s: exit %d\n%s%s" % (argv, p.returncode, p.stdout, p.stderr)
    return p


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    tree = tmp_path_factory.mktemp("tree")
    for name in BUILD_INPUTS:
        src, dst = os.path.join(ROOT, name), os.path.join(tree, name)
        if os.path.isdir(src):
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dst)
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(tree)])
    (path,) = [os.path.join(dist, f) for f in os.listdir(dist) if f.endswith(".whl")]
    return path


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh venv with the wheel pip-installed (no deps) and this venv's site-packages on a .pth line."""
    folder = str(tmp_path_factory.mktemp("venv"))
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", folder])
    python = os.path.join(folder, "bin", "python")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel])
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    with open(os.path.join(purelib, "torchsh-test-deps.pth"), "w") as f:
        f.write(site.getsitepackages()[0] + "\n")
    return folder


@pytest.fixture
def user_shell(venv):
    """Run bash as a user of the venv: its bin first on PATH, a private socket; the daemon stopped after."""
    folder = tempfile.mkdtemp(prefix="tsh-")  # short: AF_UNIX paths are limited to ~107 bytes
    os.chmod(folder, 0o700)
    env = {"PATH": os.path.join(venv, "bin") + os.pathsep + "/usr/bin:/bin", "HOME": folder,
           "TORCHSH_SOCKET": os.path.join(folder, "torchd.sock"), "LANG": "C.UTF-8"}

    def run(script):
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=folder,
                              timeout=120, stdin=subprocess.DEVNULL)
    run.home = folder
    try:
        yield run
    finally:
        run("torch daemon stop")
        shutil.rmtree(folder, ignore_errors=True)


def test_wheel_ships_torch_and_torchd_as_scripts_not_console_entry_points(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/", 1)[1] for n in names if ".data/scripts/" in n} == {"scripts/torch", "scripts/torchd"}
    assert not [n for n in names if n.endswith("entry_points.txt")]


def test_pip_installed_torch_runs_add_through_the_daemon(user_shell, venv):
    r = user_shell("command -v torch torchd; torch add '[1.5,2]' '[3,4]' | torch value")
    assert r.returncode == 0, r.stderr
    where_torch, where_torchd, value = r.stdout.split("\n")[:3]
    assert (where_torch, where_torchd) == (os.path.join(venv, "bin", "torch"), os.path.join(venv, "bin", "torchd"))
    assert value == "[%s,%s]" % tuple(repr(v) for v in torch.add(torch.tensor([1.5, 2]), torch.tensor([3, 4])).tolist())
    r = user_shell("torch daemon status")
    assert r.returncode == 0 and "torchsh 0.1.0" in r.stdout
    pid = r.stdout.split("pid:", 1)[1].split()[0]
    with open("/proc/%s/cmdline" % pid, "rb") as f:  # the daemon the client started runs the venv's python
        argv = f.read().split(b"\0")  # -P: the caller's working directory is not on its sys.path
        assert argv[:4] == [os.path.join(venv, "bin", "python").encode(), b"-P", b"-m", b"torchsh.daemon"]


def test_pip_installed_torch_starts_the_venv_python_with_IS(user_shell, venv):
    python, launcher = os.path.join(venv, "bin", "python"), os.path.join(venv, "bin", "torch")
    with open(os.path.join(venv, "bin", "torchd")) as f:
        assert f.readline().rstrip("\n") == "#!" + python  # pip rewrote `#!python`
    r = user_shell("sh -x \"$(command -v torch)\" version")  # as sh, the launcher starts bash on itself
    assert r.returncode == 0 and r.stdout.startswith("torchsh "), r.stderr
    assert "+ exec /bin/bash -p %s version" % launcher in r.stderr
    r = user_shell("bash -px \"$(command -v torch)\" --socket \"$HOME/none.sock\" daemon status")  # no fast path
    assert r.returncode == 5 and "[daemon_unavailable]" in r.stderr
    assert "+ exec %s -IS %s --socket" % (python, launcher) in r.stderr  # as bash, it runs the Python client


def test_pip_installed_torch_runs_a_command_over_the_fast_path_with_no_python(user_shell):
    """Once a command turned the daemon's fast path on, the launcher alone (no sibling torchd to find an
    interpreter by) runs commands; one the daemon hands over (`daemon stop` waits on the daemon's exit)
    needs the Python client, which this copy cannot start."""
    r = user_shell('h=$(torch ones 2) && mkdir "$HOME/solo" && cp "$(command -v torch)" "$HOME/solo/" && '
                   '"$HOME/solo/torch" value $h && "$HOME/solo/torch" daemon stop')
    assert r.stdout == "[1.0,1.0]\n" and r.returncode == 127, (r.returncode, r.stderr)
    assert r.stderr == "torch: cannot find the Python interpreter of %s/solo/torchd\n" % user_shell.home


def test_pip_installed_torch_without_bash_runs_the_python_client(user_shell):
    """No /bin/bash (the launcher's copy names one that is not there): sh runs the Python client itself."""
    r = user_shell('mkdir "$HOME/nobash" && cd "$(dirname "$(command -v torch)")" && cp torchd "$HOME/nobash/" && '
                   'sed "s|/bin/bash|/nonexistent/bash|g" torch > "$HOME/nobash/torch" && chmod +x "$HOME/nobash/torch" && '
                   '"$HOME/nobash/torch" add "[1,2]" "[3,4]" | "$HOME/nobash/torch" value')
    assert r.returncode == 0 and r.stdout == "[4,6]\n", r.stderr


def test_pip_installed_package_carries_the_nushell_module(user_shell):
    r = user_shell("torch nu-module --install")
    assert r.returncode == 0 and r.stdout.startswith("use torch.nu"), r.stderr
    home = r.stdout.split("# ", 1)[1].strip()
    with open(os.path.join(ROOT, "src", "torchsh", "shells", "torch.nu")) as want, open(home) as got:
        assert got.read() == want.read()


def test_pip_installed_torchd_serves_a_socket(user_shell):
    r = user_shell('torchd --socket "$HOME/own.sock" & pid=$!; for i in $(seq 600); do [ -S "$HOME/own.sock" ] && break; '
                   'sleep 0.1; done; TORCHSH_SOCKET=$HOME/own.sock torch ones 2 | TORCHSH_SOCKET=$HOME/own.sock torch value; '
                   'TORCHSH_SOCKET=$HOME/own.sock torch daemon stop >/dev/null; wait $pid')
    assert r.returncode == 0 and r.stdout.split("\n")[0] == "[1.0,1.0]", r.stderr


@pytest.mark.skipif(shutil.which("pipx") is None, reason="pipx is not installed here (it is no test dependency); "
                    "a pipx install installs PyTorch itself, see the README")
def test_pipx_installed_torch_runs_add(wheel, tmp_path):
    """pipx links the venv's scripts into PIPX_BIN_DIR (and adds -E to torchd's shebang); torch still works."""
    pin = tmp_path / "pin.txt"
    pin.write_text("torch==%s\n" % torch.__version__.split("+")[0])
    env = dict(os.environ, PIPX_HOME=str(tmp_path / "home"), PIPX_BIN_DIR=str(tmp_path / "bin"),
               PIPX_MAN_DIR=str(tmp_path / "man"),
               PIP_CONSTRAINT=" ".join(filter(None, [os.environ.get("PIP_CONSTRAINT"), str(pin)])))
    _run(["pipx", "install", wheel], env=env)
    folder = tempfile.mkdtemp(prefix="tsh-")
    env = {"PATH": str(tmp_path / "bin") + ":/usr/bin:/bin", "HOME": folder, "TORCHSH_SOCKET": folder + "/d.sock"}
    try:
        r = subprocess.run(["bash", "-c", "torch add '[1,2]' '[3,4]' | torch value"], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0 and r.stdout == "[4,6]\n", r.stderr
    finally:
        subprocess.run(["bash", "-c", "torch daemon stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
