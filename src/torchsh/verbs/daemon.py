"""The daemon from the shell: daemon status | start | stop | restart | ttl DUR."""
from torchsh.cli.render import Text
from torchsh.daemon import lifecycle
from torchsh.daemon.status import status_dict, status_text
from torchsh.errors import bad_argument
from torchsh.verbs import verb


class StatusRecord(dict):
    def text(self):
        return status_text(self)


@verb("daemon.status() -> Json", category="daemon", lockfree=True)
def status(ctx):
    """pid, version, devices, uptime, idle, remaining TTL, objects by kind, bytes held, memory, socket, log."""
    return StatusRecord(status_dict(ctx.app))


@verb("daemon.start() -> str", category="daemon", lockfree=True)
def start(ctx):
    """Start the daemon (any command does); says so when one is already running."""
    return Text("torchd is running (pid %d, %s)\n" % (ctx.app.pid(), ctx.app.socket_path))


@verb("daemon.stop() -> str", category="daemon", lockfree=True)
def stop(ctx):
    """Stop the daemon; every object it holds is freed."""
    ctx.app.request_stop()
    return Text("torchd stopping (pid %d)\n" % ctx.app.pid())


@verb("daemon.restart() -> str", category="daemon", lockfree=True)
def restart(ctx):
    """Restart the daemon in place: a fresh PyTorch, an empty registry; old handles become stale."""
    ctx.app.request_stop(restart=True)
    return Text("torchd restarting (pid %d)\n" % ctx.app.pid())


@verb("daemon.ttl(str duration) -> str", category="daemon", lockfree=True)
def ttl(ctx, duration):
    """Set the sliding idle TTL: 90s, 30m, 2h, 1d or none."""
    try:
        ctx.app.ttl = lifecycle.parse_ttl(duration)
    except ValueError as e:
        raise bad_argument(str(e)) from None
    return Text("ttl %s\n" % lifecycle.format_duration(ctx.app.ttl))
