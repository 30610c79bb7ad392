"""The MCP server's construction: one MCPServer (the official SDK), its daemon link, its output store, the
tools of tools.py and jobs.py, and its transports: stdio, or streamable HTTP (http.py).

    jobs.register(server, link, store)   adds the `jobs` tool
    await http.serve(server, args)       serves `server` over streamable HTTP until stopped
`server` is the MCPServer, `link` a link.Link (the daemon, with the server's policy header), `store` a
store.Store (outputs and files kept as resources), `args` main.py's parsed flags.
"""
import tempfile

from mcp.server.mcpserver import MCPServer

from torchsh.agents import jobs, tools
from torchsh.agents import link as daemon_link
from torchsh.agents import store as output_store

INSTRUCTIONS = ("torchsh: PyTorch objects (tensors, models, optimizers, datasets, jobs) held by a daemon under "
                "handles such as tensor://e7r00001. `search` finds commands, `help` shows one, `run` runs one.")


def build(args):
    """(server, link, store): the MCPServer with every tool and resource registered, for the flags `args`."""
    server = MCPServer(name="torchsh", instructions=INSTRUCTIONS, log_level="WARNING")  # stderr is the client's log
    policy = daemon_link.Policy(read_only=args.read_only, allow=tuple(args.allow), deny=tuple(args.deny))
    link = daemon_link.Link(policy=policy)
    # Plots and history scripts land in a folder only we can read (mkdtemp makes it 0700).
    store = output_store.Store(folder=tempfile.mkdtemp(prefix="torchsh-mcp-"))
    store.register(server)
    tools.register(server, link, store)
    jobs.register(server, link, store)
    for tool in server._tool_manager.list_tools():  # the SDK has no public way to reach a tool's schema
        tool.parameters = compact_schema(tool.parameters)
    return server, link, store


def compact_schema(schema):
    """The JSON schema with what costs tokens and tells an agent nothing dropped: pydantic's titles (the
    name again), and `anyOf [T, null]` for an optional argument (its default null says it). Arguments are
    still validated by the tool's own model, never by this text."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: compact_schema(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        out.pop("anyOf")
        out = dict(next(o for o in options if o != {"type": "null"}), **out)
    return out


async def serve(args):
    """Serve MCP on stdio (the default: a client such as Claude Desktop started us) or, with --http, through
    http.py until stopped."""
    server, _, store = build(args)
    try:
        if args.http:
            from torchsh.agents import http  # uvicorn and starlette: imported only to serve HTTP
            await http.serve(server, args)
        else:
            await server.run_stdio_async()
    finally:
        store.close()
