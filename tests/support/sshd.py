"""A throwaway OpenSSH server on 127.0.0.1 for the ssh context tests: this machine plays the remote host.

`sshd_host` (session scope) starts Debian's /usr/sbin/sshd in the foreground on two free ports, as the
current user (root in CI: PermitRootLogin prohibit-password), with a host key and a user key made by
ssh-keygen in a private temp folder, no PAM, and keys as the only way in. The client side is a private
ssh config (IdentityFile, a known_hosts file pre-filled with the host key: no prompt, BatchMode), which a
context names as its `ssh_config`. The "remote" runs torch through a wrapper that gives it its own
runtime folder (TMPDIR), so the remote daemon is never the test session's. At the end every forwarder
and remote daemon it saw is stopped, then sshd and its per-connection children, pass or fail.
Use: `from support.sshd import sshd_host  # noqa: F401` in a test module (tests/ is on sys.path);
bench/remote_ssh.py uses running_sshd() itself.
"""
import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest
from support.required import missing

SSHD = "/usr/sbin/sshd"
BIN = os.path.dirname(sys.executable)


class SshHost:
    """What a test needs from the harness: ssh contexts for it, and the remote side's paths."""

    def __init__(self, folder, ports):
        self.folder = folder
        self.port, self.strict_port = ports
        self.user = getpass.getuser()
        self.host = "ssh://%s@127.0.0.1:%d" % (self.user, self.port)
        # the same sshd on its second port, where it refuses to forward Unix sockets
        self.no_forwarding_host = "ssh://%s@127.0.0.1:%d" % (self.user, self.strict_port)
        self.config = os.path.join(folder, "ssh_config")
        self.remote_torch = os.path.join(folder, "remote-torch")
        self.remote_tmp = os.path.join(folder, "remote")  # the remote login's TMPDIR
        self.default_socket = os.path.join(self.remote_tmp, "torchsh-%d" % os.getuid(), "torchd.sock")
        self.log = os.path.join(folder, "sshd.log")
        self.local_sockets = []

    def context(self, name, **fields):
        """A context record as B's contexts.load returns it (ssh fields only)."""
        ctx = dict(name=name, host=self.host, socket="", ssh_config=self.config, remote_torch=self.remote_torch)
        ctx.update(fields)
        return ctx

    def local_socket(self, name):
        """Where a test's forwarder listens: a fresh private folder (short: AF_UNIX paths are ~107 bytes)."""
        path = os.path.join(tempfile.mkdtemp(prefix="tsh-ctx-"), name + ".sock")
        self.local_sockets.append(path)
        return path

    def remote_socket(self, name):
        """An explicit socket for a remote daemon, in the remote's runtime folder (stopped at the end)."""
        return os.path.join(self.remote_tmp, name + ".sock")

    def logins(self):
        """How many ssh logins sshd has accepted so far."""
        with open(self.log, errors="replace") as f:
            return f.read().count("Accepted publickey")


def _keygen(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "torchsh-test", "-f", path], check=True)


def _free_ports(n):
    held = [socket.socket() for _ in range(n)]
    try:
        for s in held:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def _write(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def _keys(folder):
    """Host key, user key, authorized_keys, and the "remote" side's torch."""
    _keygen(os.path.join(folder, "host_key"))
    _keygen(os.path.join(folder, "user_key"))
    shutil.copy(os.path.join(folder, "user_key.pub"), os.path.join(folder, "authorized_keys"))
    os.mkdir(os.path.join(folder, "remote"), 0o700)
    # sshd gives the login a fresh environment; this wrapper plays "torchsh installed on the remote host"
    _write(os.path.join(folder, "remote-torch"), "#!/bin/sh\nexport TMPDIR=%s/remote\nexec %s/torch \"$@\"\n"
           % (folder, BIN), mode=0o700)


def _configure(folder, ports):
    """sshd_config, and the client's ssh_config and known_hosts, for these ports: the second one plays a
    server whose admin forbade forwarding Unix sockets."""
    _write(os.path.join(folder, "sshd_config"), "\n".join([
        "Port %d" % ports[0], "Port %d" % ports[1], "ListenAddress 127.0.0.1",
        "HostKey %s/host_key" % folder, "PidFile %s/sshd.pid" % folder,
        "AuthorizedKeysFile %s/authorized_keys" % folder, "AllowUsers %s" % getpass.getuser(),
        "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "StrictModes no",  # the keys live under /tmp, which is world-writable
        "PermitRootLogin prohibit-password", "AllowStreamLocalForwarding yes", "PrintMotd no",
        "LogLevel INFO", "Match LocalPort %d" % ports[1], "  AllowStreamLocalForwarding no", ""]))
    with open(os.path.join(folder, "host_key.pub")) as f:
        host_key = " ".join(f.read().split()[:2])
    _write(os.path.join(folder, "known_hosts"), "".join("[127.0.0.1]:%d %s\n" % (port, host_key) for port in ports))
    _write(os.path.join(folder, "ssh_config"), "\n".join([
        "Host *", "  IdentityFile %s/user_key" % folder, "  IdentitiesOnly yes",
        "  UserKnownHostsFile %s/known_hosts" % folder, "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes", "  BatchMode yes", "  LogLevel ERROR", ""]))


def _start(folder, ports):
    """sshd in the foreground (-D), logging to sshd.log (-e); None when it did not listen."""
    log = open(os.path.join(folder, "sshd.log"), "ab")
    p = subprocess.Popen([SSHD, "-D", "-e", "-f", os.path.join(folder, "sshd_config")],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    log.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and p.poll() is None:
        try:
            for port in ports:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            time.sleep(0.05)
    _stop_sshd(p)
    return None


def _children(pid):
    kids = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % entry) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return kids


def _stop_sshd(p):
    """sshd and the per-connection sshd processes it forked (they outlive a killed listener)."""
    for pid in _children(p.pid):
        os.kill(pid, signal.SIGTERM)
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def skip_reason():
    if not os.access(SSHD, os.X_OK):
        return "needs Debian's openssh-server (%s); scripts/bootstrap.sh --with-shells installs it as root" % SSHD
    if not (shutil.which("ssh") and shutil.which("ssh-keygen")):
        return "needs OpenSSH's client (ssh, ssh-keygen)"
    if os.getuid() == 0 and not os.path.isdir("/run/sshd"):  # sshd as root needs it (privilege separation)
        os.mkdir("/run/sshd", 0o755)  # what Debian's ssh.service does before starting sshd
    return None


def _cleanup(host):
    from torchsh.client.contexts import ssh
    for path in host.local_sockets:
        ssh.stop_forwarder(path)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    for root, _, files in os.walk(host.remote_tmp):
        for name in files:
            if name.endswith(".sock"):
                subprocess.run([os.path.join(BIN, "torch"), "--socket", os.path.join(root, name), "daemon", "stop"],
                               capture_output=True, timeout=60)


@contextlib.contextmanager
def running_sshd():
    """An SshHost with its sshd running; everything it started is stopped on the way out.
    The caller checks skip_reason() first."""
    folder = tempfile.mkdtemp(prefix="tsh-ssh-")
    proc = host = None
    try:
        _keys(folder)
        for _ in range(5):  # another process may take the free port before sshd binds it
            ports = _free_ports(2)
            _configure(folder, ports)
            proc = _start(folder, ports)
            if proc is not None:
                break
        if proc is None:
            with open(os.path.join(folder, "sshd.log"), errors="replace") as f:
                raise RuntimeError("sshd did not start: %s" % f.read()[-500:])
        host = SshHost(folder, ports)
        host.sshd_pid = proc.pid
        yield host
    finally:
        try:
            if host is not None:
                _cleanup(host)
        finally:
            if proc is not None:
                _stop_sshd(proc)
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def sshd_host():
    reason = skip_reason()
    if reason:
        missing(reason)  # a skip here, a failure in CI
    with running_sshd() as host:
        yield host
