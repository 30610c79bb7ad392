"""The fixtures the TLS context tests share (tests/e2e/test_contexts*.py): `remote`, a second torchd on
tls://127.0.0.1 of the module's own, and `user`, a caller whose default daemon is the test session's and who
has context r1 on that remote; and `ok`, a bash script as that caller that must exit 0.
Use: `from support.context_fixtures import ok, remote, user  # noqa: F401  (fixtures)`."""
import pytest

from support.remotes import bash, caller_env, running


@pytest.fixture(scope="module")
def remote():
    with running("tctx-") as daemon:
        yield daemon


@pytest.fixture
def user(remote, sh):
    """A caller whose default daemon is the session's (TORCHSH_SOCKET) and who has context r1 (the TLS daemon)."""
    env = caller_env(remote.folder, TORCHSH_SOCKET=sh.socket)
    r = bash("for c in r1 r2 bad; do torch context rm $c; done 2>/dev/null >&2; torch context use default >/dev/null; "
             "torch context create r1 --host %s --fingerprint %s --token-file %s"
             % (remote.url, remote.fingerprint, remote.token_file), env)
    assert r.code == 0 and r.out == "r1\n", r.err
    return env


def ok(script, env, **kw):
    r = bash(script, env, **kw)
    assert r.code == 0, "exit %d\n%s\n%s" % (r.code, script, r.err)
    return r.out.rstrip("\n")
