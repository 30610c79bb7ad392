"""torch.nu on a named context: with TORCHSH_CONTEXT set (or `torch context use`), its calls reach the context's
daemon through the forwarder's socket, its handles read kind://NAME/…, and a handle of the default daemon
given to it fails with wrong_context, as in bash (tests/e2e/test_contexts.py)."""
import shutil

import pytest
import torch

from support.remotes import TLSRemote, bash, caller_env, private_folder, stop_all


@pytest.fixture(scope="module")
def remote():
    folder = private_folder("tnctx-")
    daemon = TLSRemote(folder)
    try:
        daemon.start()
        daemon.folder = folder
        env = caller_env(folder)
        r = bash("torch context create r1 --host %s --fingerprint %s --token-file %s"
                 % (daemon.url, daemon.fingerprint, daemon.token_file), env)
        assert r.code == 0, r.err
        yield daemon
    finally:
        daemon.stop()
        stop_all(folder)
        shutil.rmtree(folder, ignore_errors=True)


def test_nu_reaches_the_selected_context_and_prefixes_its_handles(nu, remote, tmp_path):
    env = {"XDG_CONFIG_HOME": remote.folder + "/cfg", "XDG_RUNTIME_DIR": remote.folder + "/rt"}
    out, mine = tmp_path / "y.pt", tmp_path / "y2.pt"
    script = """
        let here = (torch tensor '[1.0, 2.0]')
        $env.TORCHSH_CONTEXT = "r1"
        let a = (torch tensor '[[1.5, 2.0], [3.0, -4.0]]')
        let b = (torch matmul $a $a)
        torch save $b r1:%s
        let census = (torch tensors | get handle)
        let refused = (try { torch add $a $here; "ran" } catch {|e| $e.msg })
        torch save $b %s
        let back = (torch load %s)
        torch session save %s
        print ({a: $a, here: $here, in_census: ($b in $census), status: (torch daemon status | get context),
                refused: $refused, back: $back, back_value: (torch value $back)} | to json --raw)
    """ % (out, mine, mine, tmp_path / "sess")
    import json
    got = json.loads(nu(script, env=env))
    assert got["a"].startswith("tensor://r1/") and not got["here"].startswith("tensor://r1/")
    assert got["in_census"] and got["status"] == "r1"
    assert "belongs to context default, but this command runs on context r1" in got["refused"]
    # r1:/path is a file on r1's host (here the same machine); a plain path is the caller's: nu's socket
    # calls cannot stream it, so such a command runs through the `torch` client, which does
    a = torch.tensor([[1.5, 2.0], [3.0, -4.0]])
    assert torch.equal(torch.load(out, weights_only=True), a @ a)
    assert torch.equal(torch.load(mine, weights_only=True), a @ a)  # written here, by the client
    assert got["back"].startswith("tensor://r1/") and got["back_value"] == (a @ a).tolist()
    assert (tmp_path / "sess" / "session.safetensors").is_file()  # a folder comes back too


def test_nu_follows_torch_context_use(nu, remote):
    env = caller_env(remote.folder)
    bash("torch context use r1", env)
    try:
        r = nu.run("print (torch zeros 2)", env={"XDG_CONFIG_HOME": env["XDG_CONFIG_HOME"],
                                                 "XDG_RUNTIME_DIR": env["XDG_RUNTIME_DIR"], "TORCHSH_SOCKET": ""})
        assert r.code == 0, r.err
        assert r.out.strip().startswith("tensor://r1/")
    finally:
        bash("torch context use default", env)


def test_nu_runs_torch_context_through_the_client(nu, remote):
    env = {"XDG_CONFIG_HOME": remote.folder + "/cfg", "XDG_RUNTIME_DIR": remote.folder + "/rt"}
    listed = nu("torch context ls --json | from json | get name | to json --raw | print", env=env)
    assert listed == '["default","r1"]'


def test_nu_untyped_commands_stream_a_callers_file_through_the_client_too(nu, remote, tmp_path):
    """`nn jit_load` has no typed command: it runs by name (prelude.nu's main), and on a named context its
    plain path is the caller's file, which that wire cannot stream: it runs again through the `torch` client."""
    env = {"XDG_CONFIG_HOME": remote.folder + "/cfg", "XDG_RUNTIME_DIR": remote.folder + "/rt"}
    torch.jit.script(torch.nn.Linear(2, 1)).save(str(tmp_path / "m.pt"))
    script = """
        $env.TORCHSH_CONTEXT = "r1"
        let m = (torch nn jit_load %s)
        let missing = (try { torch nn jit_load %s; "ran" } catch {|e| $e.msg })
        print ({m: $m, missing: $missing} | to json --raw)
    """ % (tmp_path / "m.pt", tmp_path / "nope.pt")
    import json
    got = json.loads(nu(script, env=env))
    assert got["m"].startswith("nn://r1/")
    assert "nope.pt" in got["missing"] and "runs elsewhere" not in got["missing"]
