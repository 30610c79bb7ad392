"""Handle names across contexts (remote/naming.py) and certificate fingerprints (link/tls.py), as text."""
import base64
import hashlib

import pytest

from torchsh.errors import TorchshError
from torchsh.link import tls
from torchsh.remote import naming


def test_a_reply_prefixes_every_bare_handle_once():
    text = b'tensor://k3f00012\n{"m": "nn://k3f0000a", "o": "optim://gpu1/k3f00003"} http://example.com/x'
    assert naming.prefix(text, "gpu1") == (b'tensor://gpu1/k3f00012\n{"m": "nn://gpu1/k3f0000a", '
                                           b'"o": "optim://gpu1/k3f00003"} http://example.com/x')


def test_a_request_loses_its_own_prefix_and_keeps_this_daemons_bare_handles():
    assert naming.strip(b"add\0tensor://gpu1/k3f00012\0tensor://k3f00013", "gpu1", b"k3f") == \
        b"add\0tensor://k3f00012\0tensor://k3f00013"
    assert naming.strip(b"neg tensor://default/k3f00012", "default", b"k3f") == b"neg tensor://k3f00012"


def test_a_name_qualified_with_this_context_loses_its_prefix_where_a_word_starts_only():
    assert naming.strip(b'add\0@gpu1:enc\0@gpu1:exp/w~1', "gpu1", b"k3f") == b"add\0@enc\0@exp/w~1"
    assert naming.strip(b'{"args": ["@default:enc", ["@default:a", "@b"]]}', "default", b"k3f") == \
        b'{"args": ["@enc", ["@a", "@b"]]}'
    kept = b"context\0create\0x\0--host\0ssh://me@gpu2:22\0a@gpu2:b"   # not a word that starts with @
    assert naming.strip(kept, "gpu1", b"k3f") == kept
    with pytest.raises(TorchshError) as e:
        naming.strip(b"neg\0@gpu2:enc\0", "gpu1", b"k3f")
    assert e.value.code == "wrong_context" and e.value.message.startswith("@gpu2:enc belongs to context gpu2")


def test_a_restored_sessions_handles_of_an_older_epoch_are_this_daemons_on_a_named_context():
    restored = {"tensor://a0c00012"}  # `session load` keeps the saved handles, epoch a0c, in a k3f daemon
    holds = restored.__contains__
    assert naming.strip(b"add\0tensor://gpu1/a0c00012\0tensor://a0c00012", "gpu1", b"k3f", holds) == \
        b"add\0tensor://a0c00012\0tensor://a0c00012"
    with pytest.raises(TorchshError):  # a handle of that epoch this daemon does not hold came from elsewhere
        naming.strip(b"add tensor://a0c00013", "gpu1", b"k3f", holds)


@pytest.mark.parametrize("text, here, its", [
    (b"add tensor://gpu2/k3f00012", "gpu1", "gpu2"),      # another named context
    (b"add tensor://gpu1/k3f00012", "default", "gpu1"),   # a named context's handle on the local daemon
    (b"add tensor://zzz00012", "gpu1", "default"),        # another daemon's bare handle on a named context
    (b'{"args": ["lr=0.1 nn://default/k3f00001"]}', "gpu1", "default"),  # inside a phrase
])
def test_a_handle_of_another_context_is_wrong_context(text, here, its):
    with pytest.raises(TorchshError) as e:
        naming.strip(text, here, b"k3f")
    assert e.value.code == "wrong_context"
    assert "belongs to context %s, but this command runs on context %s" % (its, here) in e.value.message
    assert "--to %s" % here in e.value.hint and "cp" in e.value.hint


def test_fingerprints_read_in_ssh_and_openssl_forms():
    der = b"certificate bytes"
    digest = hashlib.sha256(der).digest()
    fp = tls.fingerprint(der)
    assert fp == "SHA256:" + base64.b64encode(digest).decode().rstrip("=")
    assert tls.parse_fingerprint(fp) == digest
    assert tls.parse_fingerprint(":".join("%02X" % b for b in digest)) == digest
    assert tls.parse_fingerprint("sha256 Fingerprint=" + digest.hex()) == digest
    with pytest.raises(ValueError):
        tls.parse_fingerprint("SHA256:short")


def test_listen_addresses():
    from torchsh.remote.listener import is_loopback, parse_listen
    assert parse_listen("tls://127.0.0.1:7443") == ("127.0.0.1", 7443)
    assert parse_listen("tls://[::1]:7443") == ("::1", 7443)
    for url in ("tcp://127.0.0.1:7443", "http://x:1", "127.0.0.1:7443"):
        with pytest.raises(ValueError):
            parse_listen(url)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("gpu1.lan")


def test_a_reply_made_later_or_prepared_on_a_named_context_is_named_when_it_is_made():
    from types import SimpleNamespace
    from torchsh.wire.http import Later, Prepare, Request, Response
    app = SimpleNamespace(registry=SimpleNamespace(epoch="k3f", holds=lambda h: True))
    request = Request("POST", "/v1/ops/fit", {naming.HEADER.lower(): "gpu1"}, b'{"args": []}')
    later = naming.dispatch(app, request, lambda app, r: Later(lambda gone: Response(200, b'{"m": "nn://k3f0000a"}')))
    assert isinstance(later, Later) and later.make(lambda: False).body == b'{"m": "nn://gpu1/k3f0000a"}'
    gone = naming.dispatch(app, request, lambda app, r: Later(lambda gone: None))
    assert gone.make(lambda: True) is None  # the client left: nothing to name, nothing to send
    prepare = Prepare(lambda: None)
    assert naming.dispatch(app, request, lambda app, r: prepare) is prepare  # dispatched again once prepared
