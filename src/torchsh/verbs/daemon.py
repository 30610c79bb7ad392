"""The daemon from the shell: daemon status | start | stop | restart | ttl DUR | log.

A daemon cannot report its own exit, so the `torch` client makes stop and restart synchronous:
the stop answers with the await reply (results.Await): the pid to wait for and the settings a restart
carries to the new daemon (client/daemonctl.py: `daemon restart` is `daemon stop --restart`, a wait, and a start).
"""
import logging
import os

from torchsh import paths
from torchsh.api.status import status_dict, status_text
from torchsh.daemon import lifecycle
from torchsh.errors import TorchshError, bad_argument
from torchsh.results import Await, Exec, Text
from torchsh.text.durations import format_duration
from torchsh.verbs import verb

log_ = logging.getLogger("torchd")  # `log` is the verb below


class StatusRecord(dict):
    def text(self):
        return status_text(self)


@verb("daemon.status() -> Json", category="daemon", lockfree=True,
      examples=("torch daemon status",), read_only=True)
def status(ctx):
    """pid, version, devices, uptime, idle, remaining TTL, objects by kind, bytes held, memory, socket, log,
    and the context the command ran on (`default`: the local daemon)."""
    return StatusRecord(status_dict(ctx.app), context=ctx.env.get("TORCHSH_CONTEXT") or "default")


@verb("daemon.start() -> str", category="daemon", lockfree=True,
      examples=("torch daemon start",))
def start(ctx):
    """Start the daemon (any command does); says so when one is already running."""
    return Text("torchd is running (pid %d, %s)\n" % (ctx.app.pid(), ctx.app.socket_path))


@verb("daemon.stop(*, bool restart=False) -> str", category="daemon", lockfree=True, replies=("await",))
def stop(ctx, restart=False):
    """Stop the daemon; every object it holds is freed. `torch daemon stop` returns once it has exited.

    --restart: the caller starts a fresh daemon with this one's settings; `torch daemon restart` does that.
    """
    if restart:
        log_.info("restarting")  # the client starts a fresh daemon once this one has exited
    ctx.app.request_stop()
    return Await("torchd %s (pid %d)\n" % ("restarting" if restart else "stopping", ctx.app.pid()),
                 ctx.app.pid(), restart_settings(ctx.app))


def restart_settings(app):
    """What a restart keeps, as "K=V K=V": the TTL now in force, the memory budget, the fast path, the TLS
    listener, the persistence folder."""
    ttl = "none" if app.ttl is None else "%.3fs" % app.ttl
    pairs = ["TORCHSH_TTL=" + ttl]
    budget = "".join((os.environ.get("TORCHSH_MAX_MEMORY") or "").split())  # torchd --max-memory sets it
    if budget:
        pairs.append("TORCHSH_MAX_MEMORY=" + budget)
    if app.fastpath is not None:
        pairs.append("TORCHSH_FASTPATH=1")
    listen = "".join((os.environ.get("TORCHSH_LISTEN") or "").split())  # torchd --listen sets it
    if listen:
        pairs.append("TORCHSH_LISTEN=" + listen)
    persist = os.environ.get("TORCHSH_PERSIST") or ""  # torchd --persist sets it (an absolute path)
    if persist and not any(c.isspace() for c in persist):  # the pairs are space-separated: such a path stays
        pairs.append("TORCHSH_PERSIST=" + persist)         # with the caller's own TORCHSH_PERSIST only
    return " ".join(pairs)


@verb("daemon.restart() -> str", category="daemon", lockfree=True, replies=("await",))
def restart(ctx):
    """Restart the daemon: a fresh PyTorch, an empty registry; old handles become stale.

    `torch daemon restart` returns once the new daemon answers: a caller that waits (the await reply) gets
    `daemon stop --restart`'s answer and starts the new daemon itself. (Through the JSON API the daemon
    re-executes itself in place, and the next request may find it still starting.)
    """
    if "await" in ctx.replies:
        return stop(ctx, restart=True)
    ctx.app.request_stop(restart=True)
    return Text("torchd restarting (pid %d)\n" % ctx.app.pid())


@verb("daemon.ttl(str duration) -> str", category="daemon", lockfree=True,
      examples=("torch daemon ttl 30m",))
def ttl(ctx, duration):
    """Set the sliding idle TTL: 90s, 30m, 2h, 1d or none."""
    try:
        ctx.app.ttl = lifecycle.parse_ttl(duration)
    except ValueError as e:
        raise bad_argument(str(e)) from None
    return Text("ttl %s\n" % format_duration(ctx.app.ttl))


@verb("daemon.log(Argv? options=None, *, bool follow=False, int lines=50) -> str", category="daemon", lockfree=True,
      replies=("exec",),
      examples=("torch daemon log -n 5",), read_only=True)
def log(ctx, options=None, follow=False, lines=50):
    """Print the last lines of the daemon's log (-n N, default 50); -f (--follow) keeps printing until Ctrl-C.

    The log is torchd.log beside the socket, rotated to torchd.log.1 past 10 MiB ($TORCHSH_LOG_MAX_BYTES).
    Following runs `tail -F` in the caller's shell (an exec directive, as `scope -- CMD` does), so no
    daemon thread waits on it.
    """
    follow, lines = _log_options(options, follow, lines)
    path = paths.sibling(ctx.app.socket_path, ".log")
    if not lifecycle.writes_to(path, 2):
        raise TorchshError("file_error", "this daemon does not log to %s (started by hand, it logs to its own "
                           "stderr)" % path, "see the terminal that started it")
    if follow:
        return Exec(["tail", "-n", str(lines), "-F", path], {})
    try:
        return Text(lifecycle.log_tail(path, lines).decode(errors="replace"))
    except (OSError, lifecycle.Untrusted) as e:
        raise TorchshError("file_error", "cannot read %s: %s" % (path, getattr(e, "strerror", None) or e),
                           "check the runtime folder") from None


def _log_options(options, follow, lines):
    """tail's short options as words: -f, -n N, -nN (the flag parser knows long flags only)."""
    words = [str(w) for w in options or ()]
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("-f", "-F"):
            follow = True
        elif w == "-n" and i + 1 < len(words):
            i += 1
            lines = words[i]
        elif w.startswith("-n") and len(w) > 2:
            lines = w[2:]
        else:
            raise bad_argument("daemon log takes -f, -n N, --follow and --lines N, not %r" % w)
        i += 1
    return follow, _count(lines)


def _count(text):
    try:
        n = int(text)
    except ValueError:
        raise bad_argument("-n needs a number of lines, not %r" % text) from None
    if not 0 <= n <= 100000:
        raise bad_argument("-n must be between 0 and 100000, not %d" % n)
    return n
