"""One-shot ssh logins of an ssh context (docs/remote.md): the ssh command line (the context's ssh config,
BatchMode, a checked ssh:// destination) and the remote daemon's start, which also tells us its socket.
The persistent forwarder that uses them is ssh.py. Errors are TorchshError, one line each.
"""
import json
import shlex
import subprocess

from torchsh.errors import TorchshError

SSH = "ssh"
REMOTE_START_TIMEOUT_S = 180.0  # ssh's login plus a remote `daemon start` (which waits up to 120 s)


def start_remote_daemon(ctx):
    """Start the remote daemon unless it runs (one ssh; `daemon start` is idempotent) and return its socket,
    as the remote daemon's own status reports it (its default lives in the remote's runtime folder)."""
    torch = remote_command(ctx)
    script = "%s daemon start >&2 && %s daemon status --json" % (torch, torch)
    argv = ssh_argv(ctx) + ["-o", "ConnectTimeout=15", "--", destination(ctx), script]
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=REMOTE_START_TIMEOUT_S)
    except FileNotFoundError:
        raise no_ssh_client() from None
    except subprocess.TimeoutExpired:
        raise TorchshError("remote_unavailable", "%s: no answer through ssh within %ds"
                           % (ctx["host"], REMOTE_START_TIMEOUT_S), "check that `ssh %s true` works"
                           % destination(ctx)) from None
    err = last_line(p.stderr)
    if p.returncode == 255:  # ssh's own failure: no route, refused, host key, authentication
        raise TorchshError("remote_unavailable", "cannot reach %s over ssh: %s" % (ctx["host"], err),
                           "`ssh %s true` must work without a prompt (a key or ssh-agent)" % destination(ctx))
    if p.returncode in (126, 127):  # the remote shell found no torch to run
        raise TorchshError("remote_unavailable", "torchsh is not installed on %s (%s)" % (hostname(ctx), err),
                           "pip install torchsh on %s, or give the context the path of torch there "
                           "(--remote-torch PATH)" % hostname(ctx))
    if p.returncode != 0:
        err = err if p.stderr.strip() else "exit status %d, no message" % p.returncode
        raise TorchshError("daemon_unavailable", "the daemon on %s did not start: %s" % (hostname(ctx), err),
                           "see its log there: `torch daemon log` on %s" % hostname(ctx))
    try:
        remote_sock = json.loads(p.stdout.decode().strip().splitlines()[-1])["socket"]
    except (ValueError, IndexError, KeyError, TypeError):
        raise TorchshError("remote_unavailable", "%s on %s is not torchsh's torch: `daemon status --json` said %r"
                           % (torch, hostname(ctx), p.stdout[:80].decode(errors="replace")),
                           "give the context the path of torchsh's torch there (--remote-torch PATH)") from None
    forwardable(remote_sock, "the remote socket")
    return remote_sock


def ssh_argv(ctx):
    argv = [SSH]
    if ctx.get("ssh_config"):
        argv += ["-F", ctx["ssh_config"]]
    return argv + ["-o", "BatchMode=yes"]  # never a password prompt in the middle of a command


def destination(ctx):
    """OpenSSH takes ssh://[user@]host[:port] as it is; anything else in a context record is refused."""
    host = ctx.get("host") or ""
    rest = host[len("ssh://"):]
    if not host.startswith("ssh://") or not rest or rest.startswith("-") or any(c in rest for c in " \t\n/"):
        raise TorchshError("bad_argument", "%r is not an ssh host" % host, "write it ssh://user@host[:port]")
    return host


def hostname(ctx):
    """The host alone, for messages: ssh://u@[::1]:22 -> [::1], ssh://u@gpu1:2222 -> gpu1."""
    host = destination(ctx)[len("ssh://"):].rpartition("@")[2]
    return host[:host.index("]") + 1] if host.startswith("[") and "]" in host else host.partition(":")[0]


def remote_command(ctx):
    """The remote torch as shell words: the context's path (~/ expands there) and its --socket, if any."""
    torch = ctx.get("remote_torch") or "torch"
    words = "~/" + shlex.quote(torch[2:]) if torch.startswith("~/") else shlex.quote(torch)
    if ctx.get("socket"):
        forwardable(ctx["socket"], "the context's remote socket")
        words += " --socket " + shlex.quote(ctx["socket"])
    return words


def forwardable(path, what):
    if not path.startswith("/") or ":" in path:  # ssh -L LOCAL:REMOTE splits on ':' and needs a path
        raise TorchshError("bad_argument", "%s %r must be an absolute path without ':'" % (what, path),
                           "give the context another socket path")


def last_line(data):
    lines = [line.strip() for line in data.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def no_ssh_client():
    return TorchshError("remote_unavailable", "no ssh client here (`%s` is not on PATH)" % SSH,
                        "install OpenSSH's client (Debian: apt-get install openssh-client)")
