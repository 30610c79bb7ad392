"""`torch mcp`: this daemon as a Model Context Protocol server for LLM agents (the `mcp` extra).

The server is a process of its own and a client of this daemon (torchsh/agents/: same socket, same trust,
same handles as the user's shells). The verb only starts it where the caller is: it answers an exec reply
that runs `python -m torchsh.agents FLAGS…` in the caller's world, so that stdio is the agent client's own
pipes (Claude Desktop, Cursor, VS Code start `torch mcp` and talk to its stdin and stdout), with
TORCHSH_SOCKET naming this daemon. The daemon never imports the SDK.
"""
import importlib.util

from torchsh import paths
from torchsh.errors import TorchshError, bad_argument
from torchsh.results import Exec
from torchsh.verbs import verb

EXTRA_HINT = "pip install 'torchsh[mcp]'"


@verb("mcp(*, bool http=False, int? port=None, str host=\"127.0.0.1\", bool read_only=False, str? allow=None, "
      "str? deny=None, bool tools=False, Path? tls_cert=None, Path? tls_key=None) -> None",
      category="shell", repeatable=("allow", "deny"), replies=("exec",),
      examples=("torch mcp --tools --read_only | head -c 300",))
def mcp(ctx, http=False, port=None, host="127.0.0.1", read_only=False, allow=None, deny=None, tools=False,
        tls_cert=None, tls_key=None):
    """Serve this daemon to LLM agents over the Model Context Protocol: stdio by default (what Claude Desktop,
    Cursor and VS Code start), or --http: streamable HTTP on a Unix socket beside the daemon's, and with --port
    on HOST:PORT with a bearer token (beyond loopback only with --tls_cert and --tls_key). A dozen tools cover
    every command (search, help, run, inspect, objects, jobs, runs, plot, history); each result stays under
    8 KB, bigger ones become resources. The agent works on the same objects as your shells.

    Args:
        http: serve streamable HTTP instead of stdio
        port: with --http: also listen on HOST:PORT (a bearer token from the token file)
        host: with --port: the address (127.0.0.1; beyond loopback only with TLS)
        read_only: admit only the commands that change nothing (`torch ops --json`: read_only)
        allow: also admit the commands matching this pattern (fnmatch on the name: fit, nn.save, lm.*); without
            --read_only, admit only those
        deny: never admit the commands matching this pattern (deny wins over --allow)
        tools: print the tool definitions an agent sees, and their size in tokens, then exit
        tls_cert: with --port beyond loopback: the certificate file (PEM)
        tls_key: with --tls_cert: its private key (PEM)
    """
    if importlib.util.find_spec("mcp") is None:
        raise TorchshError("missing_extra", "torch mcp needs the Model Context Protocol SDK (the mcp package)",
                           EXTRA_HINT)
    if port is not None and not 0 < port < 65536:
        raise bad_argument("--port must be 1 to 65535, got %d" % port)
    if (tls_cert is None) != (tls_key is None):
        raise bad_argument("--tls_cert and --tls_key go together", "give both, or neither")
    return Exec(paths.python_m("torchsh.agents", *_flags(http, port, host, read_only, allow, deny, tools,
                                                          tls_cert, tls_key)), _daemon_env(ctx))


def _flags(http, port, host, read_only, allow, deny, tools, tls_cert, tls_key):
    """The server's own command line (torchsh/agents/main.py) for these settings."""
    words = ["--http"] * http + ["--read-only"] * read_only + ["--tools"] * tools
    if port is not None:
        words += ["--port", str(port), "--host", host]
    for flag, patterns in (("--allow", allow), ("--deny", deny)):
        for pattern in [patterns] if isinstance(patterns, str) else patterns or ():  # given once: its text
            words += [flag, pattern]
    if tls_cert is not None:
        words += ["--tls-cert", tls_cert, "--tls-key", tls_key]
    return words


def _daemon_env(ctx):
    """The variable that points the server at this daemon: its socket. On a named context the exec would run
    this host's Python in the caller's world (another machine): refused, naming what works instead."""
    if ctx.context_name != "default":
        raise TorchshError("not_supported", "torch mcp runs where its daemon runs; context %r is another host's"
                           % ctx.context_name, "give the agent `ssh HOST torch mcp` as its command (stdio goes "
                           "through ssh), or `torch mcp --http --port N` there behind TLS")
    return {"TORCHSH_SOCKET": ctx.app.socket_path}
