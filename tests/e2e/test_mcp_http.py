"""`torch mcp --http` through the official SDK's streamable HTTP client: on its private Unix socket (httpx over
the socket) and on loopback with the bearer token, it lists the tools and runs a command on the daemon the
user's shell sees; without the token, or with a wrong one, every request is refused 401 and nothing runs; a
Host that is not ours is refused (DNS rebinding); a --host beyond loopback without TLS never listens."""
import json
import os
import ssl
import stat
import subprocess
import tempfile

import pytest

from support.mcpclient import BIN, connect, daemon_env, free_port, http_server, mcp_socket, sh  # noqa: F401  (fixture: the module's own daemon)
from support.required import require_tool
from torchsh.agents import tokens

httpx2 = pytest.importorskip("httpx2", reason="the mcp extra is not installed (pip install 'torchsh[mcp]')")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize("kind", ["http", "http-port"])
def test_the_sdk_client_lists_the_tools_and_runs_a_command_the_shell_then_sees(sh, kind):
    with connect(sh, kind) as session:
        assert {"run", "jobs", "search"} <= {t["name"] for t in session.tools()}
        got = session.run("ones", "3")
        assert not got.is_error, got.text
        handle = got.handles()[0]
    assert sh("torch value %s" % handle) == "[1.0,1.0,1.0]"


def post(url, headers, body=INITIALIZE, uds=None):
    transport = httpx2.HTTPTransport(uds=uds) if uds else None
    with httpx2.Client(transport=transport, timeout=30) as client:
        return client.post(url, headers=dict(MCP_ACCEPT, **headers), content=json.dumps(body))


def census(sh):
    """The handles the daemon holds."""
    return [line.split()[0] for line in sh("torch tensors").splitlines()[1:]]


def test_without_the_right_token_every_request_is_refused_and_nothing_runs(sh):
    port = free_port()
    with tempfile.TemporaryFile("w+") as log, http_server(sh, [], log, port) as (url, _, headers):
        token_file = tokens.token_path(sh.socket)
        assert stat.S_IMODE(os.lstat(token_file).st_mode) == 0o600
        opened = post(url, headers)
        assert opened.status_code == 200, opened.text
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "run", "arguments": {"argv": ["ones", "4242"]}}}
        before = census(sh)
        for wrong in ({}, {"Authorization": "Bearer " + "0" * 64}, {"Authorization": "Basic eDp5"}):
            for body in (INITIALIZE, call):
                refused = post(url, dict(session, **wrong), body)
                assert refused.status_code == 401, refused.text
                assert json.loads(refused.text)["code"] == "token_refused"
        assert census(sh) == before and "[4242]" not in sh("torch tensors")


def test_a_host_that_is_not_ours_is_refused_on_the_port_and_on_the_socket(sh):
    port = free_port()
    with tempfile.TemporaryFile("w+") as log, http_server(sh, [], log, port) as (url, _, headers):
        assert post(url, dict(headers, Host="attacker.example:%d" % port)).status_code == 421
        assert post(url, headers).status_code == 200
        sock = mcp_socket(sh)
        assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
        assert post("http://attacker.example/mcp", {}, uds=sock).status_code == 421
        assert post("http://localhost/mcp", {}, uds=sock).status_code == 200
    assert not os.path.exists(mcp_socket(sh))  # removed when the server stopped


def test_a_port_beyond_loopback_without_tls_never_listens(sh):
    argv = [os.path.join(BIN, "torch"), "mcp", "--http", "--port", str(free_port()), "--host", "0.0.0.0"]
    done = subprocess.run(argv, env=dict(os.environ, **daemon_env(sh)), cwd=sh.folder, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "[untrusted_network]" in done.stderr, done.stderr
    assert not os.path.exists(mcp_socket(sh))


def test_with_tls_files_the_port_speaks_https_and_still_wants_the_token(sh, tmp_path):
    openssl = require_tool("openssl")
    cert, key = str(tmp_path / "c.pem"), str(tmp_path / "k.pem")
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    port = free_port()
    with tempfile.TemporaryFile("w+") as log, \
            http_server(sh, ["--tls-cert", cert, "--tls-key", key], log, port) as (url, _, headers):
        url = url.replace("http://", "https://")
        with httpx2.Client(verify=ssl.create_default_context(cafile=cert), timeout=30) as client:
            refused = client.post(url, headers=MCP_ACCEPT, content=json.dumps(INITIALIZE))
            opened = client.post(url, headers=dict(MCP_ACCEPT, **headers), content=json.dumps(INITIALIZE))
        assert refused.status_code == 401 and opened.status_code == 200, (refused.text, opened.text)
        with pytest.raises(httpx2.HTTPError):  # no plain HTTP on that port
            httpx2.post(url.replace("https://", "http://"), headers=MCP_ACCEPT, content="{}", timeout=10)
