"""verbs/mcp.py: `torch mcp` answers an exec reply that runs the MCP server (torchsh.agents) in the caller's
world, pointed at this daemon; without the SDK it is missing_extra, with the extra to install in its hint."""
import importlib.util
from types import SimpleNamespace

import pytest

from torchsh import paths
from torchsh.errors import TorchshError
from torchsh.results import Exec
from torchsh.verbs import mcp


def _ctx(env=None):
    return SimpleNamespace(app=SimpleNamespace(socket_path="/run/x/torchd.sock"),
                           context_name=(env or {}).get("TORCHSH_CONTEXT") or "default")


def test_without_the_sdk_it_is_missing_extra_naming_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    with pytest.raises(TorchshError) as e:
        mcp.mcp(_ctx())
    assert (e.value.code, e.value.hint) == ("missing_extra", "pip install 'torchsh[mcp]'")


def test_it_execs_the_server_with_its_flags_and_this_daemons_socket(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())  # a flag given once is its text
    done = mcp.mcp(_ctx(), http=True, port=8765, read_only=True, allow=["fit", "lm.*"], deny="nn.save",
                   tls_cert="/c.pem", tls_key="/k.pem")
    assert isinstance(done, Exec) and done.then_argv == ()
    assert done.argv == paths.python_m("torchsh.agents", "--http", "--read-only", "--port", "8765", "--host",
                                       "127.0.0.1", "--allow", "fit", "--allow", "lm.*", "--deny", "nn.save",
                                       "--tls-cert", "/c.pem", "--tls-key", "/k.pem")
    assert done.env == {"TORCHSH_SOCKET": "/run/x/torchd.sock"}


def test_on_a_named_context_it_is_refused_naming_ssh(monkeypatch):
    """The exec would run the context host's Python path on the caller's machine: refused before anything runs."""
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    with pytest.raises(TorchshError) as refused:
        mcp.mcp(_ctx({"TORCHSH_CONTEXT": "gpu1"}))
    assert refused.value.code == "not_supported" and "ssh HOST torch mcp" in refused.value.hint


@pytest.mark.parametrize("kwargs", [{"port": 0}, {"port": 70000}, {"tls_cert": "/c.pem"}])
def test_a_bad_port_or_half_a_tls_pair_is_refused(monkeypatch, kwargs):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    with pytest.raises(TorchshError) as e:
        mcp.mcp(_ctx(), **kwargs)
    assert e.value.code == "bad_argument"
