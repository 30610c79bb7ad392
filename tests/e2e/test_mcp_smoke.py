"""`python -m torchsh.agents` through the official SDK's client over stdio, against the test daemon: the tools
are listed, a command runs, its tensor is inspected, and an answer over 8 KB comes back as a resource."""
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from torchsh.agents import bounded


async def session(sh, calls):
    """Run `calls(client)` against a server started as a user's MCP client starts it (stdio)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "torchsh.agents"],
                                   env={"TORCHSH_SOCKET": sh.socket}, cwd=sh.folder)
    async with Client(params) as client:
        return await calls(client)


def test_a_command_runs_and_its_tensor_is_inspected_through_stdio(sh):
    async def calls(client):
        names = {tool.name for tool in (await client.list_tools()).tools}
        made = await client.call_tool("run", {"argv": ["randn", "[3]"]})
        handle = made.content[0].text.strip()
        return names, made, handle, await client.call_tool("inspect", {"handle": handle})
    names, made, handle, inspected = anyio.run(session, sh, calls)
    assert {"search", "help", "run", "inspect", "objects", "runs", "plot", "history"} <= names
    assert not made.is_error and handle.startswith("tensor://")
    assert sh("torch shape %s" % handle) == "[3]"
    text = inspected.content[0].text
    assert not inspected.is_error and "float32" in text and "3" in text


def test_an_answer_over_8_kb_is_a_resource_read_back_whole(sh):
    handle = sh("torch randn 3000")

    async def calls(client):
        result = await client.call_tool("run", {"argv": ["value", handle]})
        link = next(block for block in result.content if block.type == "resource_link")
        return result, await client.read_resource(str(link.uri))
    result, read = anyio.run(session, sh, calls)
    assert bounded.size(result) <= bounded.LIMIT
    assert read.contents[0].text == sh("torch value %s" % handle) + "\n"
