"""`torch mcp --http`'s doors (torchsh/agents/http.py, tokens.py): the private Unix socket bound as every
socket of the house is, a TCP port only on loopback or behind TLS, the bearer token file and its gate, and the
SDK's DNS-rebinding settings admitting only our own Host names."""
import argparse
import os
import stat

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'torchsh[mcp]')")

from mcp.server.transport_security import TransportSecurityMiddleware  # noqa: E402

from torchsh.agents import http, tokens  # noqa: E402
from torchsh.errors import TorchshError  # noqa: E402


def code_of(fn, *args):
    with pytest.raises(TorchshError) as refused:
        fn(*args)
    return refused.value.code


def test_beyond_loopback_a_port_needs_tls_and_loopback_does_not():
    http.check_door("127.0.0.1", None, None)
    http.check_door("::1", None, None)
    assert code_of(http.check_door, "0.0.0.0", None, None) == "untrusted_network"
    assert code_of(http.check_door, "example.org", None, None) == "untrusted_network"
    assert code_of(http.check_door, "127.0.0.1", "cert.pem", None) == "usage"


def test_tls_files_must_be_ours_and_private(tmp_path):
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("x")
    key.write_text("x")
    http.check_door("10.0.0.1", str(cert), str(key))
    os.chmod(key, 0o666)
    assert code_of(http.check_door, "10.0.0.1", str(cert), str(key)) == "untrusted"
    assert code_of(http.check_door, "10.0.0.1", str(cert), str(tmp_path / "none.pem")) == "file_error"


def hosts_admitted(settings, *hosts):
    check = TransportSecurityMiddleware(settings)
    return [check._validate_host(h) for h in hosts]


def test_dns_rebinding_settings_admit_our_host_names_only():
    settings = http.transport_security(8123)
    assert hosts_admitted(settings, "localhost", "127.0.0.1:8123", "localhost:8123", "[::1]:8123") == [True] * 4
    assert hosts_admitted(settings, "evil.example:8123", "127.0.0.1.evil.example", "10.0.0.1:8123") == [False] * 3
    assert hosts_admitted(http.transport_security(8123, "10.0.0.1"), "10.0.0.1:8123") == [True]
    assert not TransportSecurityMiddleware(settings)._validate_origin("http://evil.example")


def test_the_unix_socket_is_0600_busy_while_served_and_removed_only_when_ours(tmp_path):
    daemon = str(tmp_path / "torchd.sock")
    found = http.listeners(argparse.Namespace(port=None), daemon)
    path = http.socket_path(daemon)
    assert [listener.path for listener in found] == [path] and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert code_of(http.bind_unix, path) == "busy"
    found[0].sock.close()
    os.unlink(path)
    newer, _ = http.bind_unix(path)  # another server's socket now: ours must leave it be
    found[0].close()
    assert os.path.exists(path)
    newer.close()


def test_a_socket_folder_others_can_write_is_refused(tmp_path):
    os.chmod(tmp_path, 0o777)
    try:
        assert code_of(http.bind_unix, str(tmp_path / "torchd.mcp.sock")) == "untrusted"
    finally:
        os.chmod(tmp_path, 0o700)


def test_a_port_listener_has_a_private_token_and_refused_hosts_bind_nothing(tmp_path):
    daemon = str(tmp_path / "torchd.sock")
    with pytest.raises(TorchshError):
        http.listeners(argparse.Namespace(port=0, host="0.0.0.0"), daemon)
    assert not os.path.exists(http.socket_path(daemon))
    found = http.listeners(argparse.Namespace(port=0), daemon)
    try:
        assert found[1].sock.getsockname()[0] == "127.0.0.1" and "Bearer" in found[1].url
        token_file = tokens.token_path(daemon)
        assert stat.S_IMODE(os.lstat(token_file).st_mode) == 0o600
        assert found[1].app == (tokens.ensure_token(token_file), token_file)  # made once, then read
    finally:
        for listener in found:
            listener.close()


def test_a_token_file_others_can_write_is_never_read(tmp_path):
    path = str(tmp_path / "t.token")
    tokens.ensure_token(path)
    os.chmod(path, 0o622)
    assert code_of(tokens.ensure_token, path) == "untrusted"


def asgi_status(gate, headers):
    """The status GATE answers an HTTP request with HEADERS, and whether the app behind it ran."""
    ran, sent = [], []

    async def app(scope, receive, send):
        ran.append(True)
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}
    gate.app = app
    anyio.run(gate, {"type": "http", "headers": headers}, receive, send)
    return sent[0]["status"], bool(ran)


def test_the_gate_lets_through_only_the_right_bearer_token():
    gate = tokens.BearerGate(None, b"s3cret" * 6, "/run/t.token")
    assert asgi_status(gate, [(b"authorization", b"Bearer " + b"s3cret" * 6)]) == (200, True)
    assert asgi_status(gate, []) == (401, False)
    assert asgi_status(gate, [(b"authorization", b"Bearer wrong")]) == (401, False)
    assert asgi_status(gate, [(b"authorization", b"Bearer " + b"s3cret" * 6)] * 2) == (401, False)


def test_a_websocket_without_the_token_is_closed_before_the_app_and_lifespan_passes():
    ran, sent = [], []

    async def app(scope, receive, send):
        ran.append(scope["type"])

    async def send(message):
        sent.append(message)

    async def receive():
        return {}
    gate = tokens.BearerGate(app, b"s3cret" * 6, "/run/t.token")
    anyio.run(gate, {"type": "websocket", "headers": []}, receive, send)
    assert ran == [] and sent == [{"type": "websocket.close", "code": 1008}]
    anyio.run(gate, {"type": "lifespan"}, receive, send)
    assert ran == ["lifespan"]
