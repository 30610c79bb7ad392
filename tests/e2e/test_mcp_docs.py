"""docs/mcp.md's examples run through the official MCP SDK's client, against `torch mcp` over stdio, and print
what the doc says they print; its client configs are valid JSON that starts `torch mcp`.

A ```mcp block is a session, one tool call a line (the doc says so under "How the examples are written"):
`[NAME = ]TOOL {JSON arguments}`, where `$NAME` in a later line stands for the first handle NAME's result
showed; `# => TEXT` after a call: its result's text holds TEXT (in order, as tests/e2e/test_docs.py reads
`# =>`); `# !> TEXT`: the call is a tool error whose text holds TEXT. A line `<!-- torch mcp FLAGS -->` right
before a block starts that block's server with FLAGS. Each block gets a daemon and a folder of its own.
"""
import json
import os
import re

import pytest

from conftest import own_daemon
from support.agentsides import handles
from support.mcpclient import connect, sh  # noqa: F401  (fixture: the module's own daemon)

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "mcp.md")
_BLOCK = re.compile(r"(?:<!-- torch mcp ([^>]*?) -->\n)?```(mcp|json)\n(.*?)```", re.S)
_CALL = re.compile(r"^(?:(\w+) = )?(\w+) (\{.*\})$")


def blocks(language):
    """(index, flags, code) of each ```LANGUAGE block of docs/mcp.md."""
    with open(DOC) as f:
        text = f.read()
    return [(i, (m.group(1) or "").split(), m.group(3)) for i, m in enumerate(_BLOCK.finditer(text))
            if m.group(2) == language]


def steps(code):
    """[(name, tool, arguments text, [(kind, text)…])]: each call with the expectations after it."""
    out = []
    for line in code.splitlines():
        line = line.strip()
        expect = re.match(r"^# (=>|!>) (.+)$", line)
        if expect:
            assert out, "an expectation before any call: %r" % line
            out[-1][3].append((expect.group(1), expect.group(2).strip()))
        elif line and not line.startswith("#"):
            call = _CALL.match(line)
            assert call, "not a tool call line: %r" % line
            out.append((call.group(1), call.group(2), call.group(3), []))
    return out


def test_the_doc_has_its_examples():
    assert len(blocks("mcp")) >= 2
    assert len(blocks("json")) >= 3


@pytest.mark.parametrize("index,flags,code", blocks("json"), ids=[str(i) for i, _, _ in blocks("json")])
def test_each_client_config_starts_torch_mcp(index, flags, code):
    config = json.loads(code)
    servers = config.get("mcpServers") or config.get("servers")
    assert servers and "torchsh" in servers, config
    entry = servers["torchsh"]
    assert entry["command"] == "torch" and entry["args"][:1] == ["mcp"], entry


@pytest.mark.slow
@pytest.mark.parametrize("index,flags,code", blocks("mcp"), ids=[str(i) for i, _, _ in blocks("mcp")])
def test_each_session_runs_and_shows_what_the_doc_says(index, flags, code):
    with own_daemon() as sh, connect(sh, "stdio", *flags) as mcp:
        named = {}
        for name, tool, arguments, expected in steps(code):
            for key, value in named.items():
                arguments = arguments.replace("$" + key, value)
            got = mcp.call(tool, **json.loads(arguments))
            where = "block %d: %s %s" % (index, tool, arguments)
            errors = [text for kind, text in expected if kind == "!>"]
            assert got.is_error == bool(errors), "%s -> %s" % (where, got.text[:2000])
            pos = 0
            for _, want in expected:
                found = got.text.find(want, pos)
                assert found >= 0, "%s: expected %r after position %d in\n%s" % (where, want, pos, got.text[:4000])
                pos = found + len(want)
            if name:
                shown = handles(got.text) + got.links
                assert shown, "%s: %s names no handle" % (where, name)
                named[name] = shown[0]
