"""protocol.REPLIES' upload and download rows against every caller of the daemon (tests/support/callers.py):
the caller's files, read or written on a remote context (a TLS daemon, made once for the module), by the
client or the functions running it, by nu through the handover reply, and refused by name to a JSON API
caller that lists neither. The other rows: test_replies.py.

These tests run real bash, zsh and nu (scripts/bootstrap.sh --with-shells installs them; CI as root).
"""
import json
import os
import subprocess

import pytest
import torch

from support.callers import SHELLS, callers, post  # noqa: F401  (callers is a fixture)

pytestmark = pytest.mark.slow  # several shells and daemons a test: tests/conftest.py's rule


@pytest.fixture(scope="module")
def remote():
    from support.remotes import running
    with running("trep-") as daemon:
        yield daemon


@pytest.fixture
def on_r1(remote, sh, callers):
    """The callers' environment with context r1 (the TLS daemon) made and chosen (TORCHSH_CONTEXT)."""
    from support.remotes import bash, caller_env
    env = caller_env(remote.folder, TORCHSH_SOCKET=sh.socket)
    r = bash("torch context rm r1 2>/dev/null; torch context create r1 --host %s --fingerprint %s --token-file %s"
             % (remote.url, remote.fingerprint, remote.token_file), env)
    assert r.code == 0, r.err
    return {k: env[k] for k in ("XDG_CONFIG_HOME", "XDG_RUNTIME_DIR")} | {"TORCHSH_CONTEXT": "r1"}


def _file_cases(callers, env, shell_line, nu_line, check):
    for caller in SHELLS:
        out, code, handed, err = callers.run(caller, shell_line, env)
        assert code == 0 and check(out), (caller, err)
        assert caller in ("client", "launcher") or handed, caller  # a named context: the functions run the client
    out, code, handed, err = callers.run("nu", nu_line, env)
    assert code == 0 and check(out) and handed, err  # the handover reply: nu runs ^torch, which streams files


def test_upload(sh, callers, on_r1, remote):
    torch.save(torch.tensor([4.0, 5.0]), os.path.join(callers.folder, "in.pt"))
    _file_cases(callers, on_r1, "torch value $(torch load in.pt)",
                "torch load in.pt | torch value | to json --raw | print", lambda out: json.loads(out) == [4.0, 5.0])
    status, reply = post(remote.sock, "load", {"args": ["in.pt"], "cwd": callers.folder,
                                               "env": {"TORCHSH_CONTEXT": "r1"}})
    assert reply["error"]["code"] == "remote_path"  # lists neither upload nor handover: refused by name


def test_download(sh, callers, on_r1, remote):
    out_file = os.path.join(callers.folder, "out.pt")

    def written(out):
        ok = torch.equal(torch.load(out_file, weights_only=True), torch.tensor([1.0, 2.0]))
        os.unlink(out_file)
        return ok
    _file_cases(callers, on_r1, "torch save $(torch tensor '[1.0,2.0]') out.pt",
                "torch save (torch tensor [1.0 2.0]) out.pt", written)
    t = subprocess.run(["bash", "-c", "torch tensor '[1.0,2.0]'"], env=dict(callers.env, TORCHSH_SOCKET=remote.sock),
                       capture_output=True, text=True).stdout.strip()
    status, reply = post(remote.sock, "save", {"args": [t, "out.pt"], "cwd": callers.folder,
                                               "env": {"TORCHSH_CONTEXT": "r1"}})
    assert reply["error"]["code"] == "remote_path" and not os.path.exists(out_file)
