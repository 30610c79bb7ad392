"""Help without a daemon: `torch`, `torch help [OP]` and `torch OP --help` when no torchd answers.

Asking how a command works must not leave a daemon behind (git, docker and kubectl answer `--help` without
their servers). The client (client/main.py) execs this module in a process of its own when no daemon
answers and the words ask for help alone; it builds the op table as the daemon does (from its JSON cache, so
mostly the cost of importing PyTorch), renders the very text the daemon's CLI face would (cli/run.py, with
an app that holds nothing but the table), prints it and exits. Nothing here listens or holds objects.
The overview (`torch` alone) is the text the last table built left in the cache (cachefiles.py): printed
without importing PyTorch at all.
"""
import contextlib
import os
import sys

from torchsh import __version__, cachefiles

OVERVIEW_WORDS = ([], ["help"], ["-h"], ["--help"])  # what asks for the overview (cli/run.run_cli)


class HelpOnlyApp:
    """What run_cli reads of daemon.app.App on a help request: the table and an empty registry; no objects, no
    socket, no log."""

    def __init__(self, table):
        self.table = table
        self.version = __version__
        self.log_path = "(no daemon: help ran in the `torch` process)"
        self.memory = None
        from torchsh.registry import Registry
        self.registry = Registry()  # empty: `@name` words resolve against it as against a daemon holding nothing

    def tensor_lock(self, op=None):
        return contextlib.nullcontext()  # one process, one request: nothing to wait for


def main(argv):
    if argv in OVERVIEW_WORDS:  # `torch` alone: the overview the last table built left, without importing PyTorch
        text = cachefiles.read_overview()
        if text is not None:
            sys.stdout.write(text)
            return 0
    from torchsh.cli.help import overview
    from torchsh.cli.run import run_cli
    from torchsh.table import build_table
    table, _ = build_table()
    cachefiles.keep_overview(overview(table))
    # the width alone, as the client sends it to a daemon (a scope or device named in TORCHSH_* means nothing here)
    env = {"TORCHSH_COLUMNS": os.environ["TORCHSH_COLUMNS"]} if "TORCHSH_COLUMNS" in os.environ else {}
    if not env and os.isatty(1):
        env["TORCHSH_COLUMNS"] = str(os.get_terminal_size(1).columns)
    request = dict(argv=argv, cwd="/", env=env, stdin_is_tty=True, stdin=None)
    reply = run_cli(HelpOnlyApp(table), request)
    sys.stdout.write(reply.stdout)
    sys.stderr.write(reply.stderr)
    return reply.exit


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
