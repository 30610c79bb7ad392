"""Every row of protocol.REPLIES against every caller of the daemon: the Python `torch` client, the installed
launcher (bash over the fast path), the bash function, the zsh function, torch.nu's typed commands and its
commands by name, and the JSON API. Each pair carries
the reply out with the client's stdout and exit status, or hands the command over to the client before
anything ran (seen here through a `torch` shim on PATH that logs each run), or is refused with the row's
code. A new row without a case here fails test_every_row_has_a_case. The callers: tests/support/callers.py;
upload and download, on a TLS remote context: test_replies_files.py.

These tests run real bash, zsh and nu (scripts/bootstrap.sh --with-shells installs them; CI as root).
"""
import json
import os
import shutil

import pytest
import torch

from torchsh import protocol
from support.callers import BIN, SHELLS, callers, cli_body, post, raw  # noqa: F401  (callers is a fixture)

pytestmark = pytest.mark.slow  # several shells and daemons a test: tests/conftest.py's rule

CASES = ("stdin", "exec", "follow", "copy", "upload", "download", "await", "env", "handover")


def test_every_row_has_a_case():
    assert tuple(r.name for r in protocol.REPLIES) == CASES


# -- stdin: resend with N stdin lines (the functions and the client; nu and the API give them up front) --------
def test_stdin(sh, callers):
    a = sh.put(torch.tensor([1.0, 2.0]))
    want = "[-1.0,-2.0]"
    for caller in SHELLS:
        out, code, handed, err = callers.run(caller, "echo %s | torch neg | torch value" % a)
        assert (out.strip(), code, handed) == (want, 0, []), (caller, err)
    for script in ("'%s' | torch neg | torch value | to json --raw | print" % a,
                   "'%s' | torch \"neg\" | torch value | to json --raw | print" % a):
        out, code, handed, err = callers.run("nu", script)
        assert (json.loads(out), code, handed) == ([-1.0, -2.0], 0, []), (script, err)
    # a CLI caller that lists no stdin (nor handover) is refused before anything runs; one that does is asked
    status, headers, body = raw(sh.socket, "POST", "/v1/cli", cli_body(["neg"], tty=False), replies=())
    assert headers[protocol.H_EXIT] == "2" and b"[needs_client]" in body and protocol.H_STDIN not in headers
    status, headers, body = raw(sh.socket, "POST", "/v1/cli", cli_body(["neg"], tty=False), replies=("stdin",))
    assert headers[protocol.H_STDIN] == "1"


# -- exec: a block form's command run in the caller's world, then the closing command ------------------------
def test_exec(sh, callers):
    inner = "%s/torch ones 3 | %s/torch numel | %s/torch value" % (BIN, BIN, BIN)  # the client itself, not the shim
    block = "torch scope -- sh -c '%s; exit 7'" % inner
    for caller in SHELLS:
        out, code, handed, err = callers.run(caller, block)
        assert (out.strip(), code, handed) == ("3", 7, []), (caller, err)
    out, code, handed, err = callers.run("nu", "torch scope { torch ones [3] | torch numel } | print")
    assert (out.strip(), code, handed) == ("3", 0, []), err
    out, code, handed, err = callers.run("nu", '''torch "scope" "--" "sh" "-c" "%s"''' % inner)
    assert code == 0 and handed and handed[0].startswith("scope -- sh -c"), err  # by name: handed over
    assert out.strip() == "3"
    body = {"kwargs": {"command": ["true"]}}
    assert post(sh.socket, "scope", body)[1]["error"]["code"] == "needs_client"  # lists nothing: refused
    assert "exec" in post(sh.socket, "scope", dict(body, exec=True))[1]
    assert "exec" in post(sh.socket, "scope", body, replies=("exec",))[1]
    assert post(sh.socket, "scope", body, replies=("handover",))[1]["handover"]["needs"] == "exec"
    assert not [s for s in json.loads(sh("torch tensors --json")) if s.get("scope")]  # nothing left open


# -- follow: a job followed to its end ---------------------------------------------------------------------------
MAKE = ("torch manual_seed 5; m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
        "L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 4); ")
NU_MAKE = ("torch manual_seed 5\nlet m = (torch nn linear 2 1)\nlet o = (torch optim sgd $m --lr 0.1)\n"
           "let L = (torch data loader (torch data tensors {x} {y}) --batch_size 4)\n")


def _losses(rows):
    return [(r["epoch"], r["loss"]) for r in rows]


def test_follow(sh, callers):
    x, y = sh.put(torch.randn(16, 2)), sh.put(torch.randn(16, 1))
    want = None
    for caller in SHELLS:
        out, code, handed, err = callers.run(caller, MAKE.format(x=x, y=y) + "torch fit $m $o $L --loss mse_loss --epochs 2 --json")
        rows = [json.loads(line) for line in out.splitlines()]
        assert code == 0 and handed == [] and [r["epoch"] for r in rows] == [1, 2], (caller, err)
        want = want or _losses(rows)
        assert _losses(rows) == want, caller
    nu_make = NU_MAKE.format(x=x, y=y)
    out, code, handed, err = callers.run("nu", nu_make + "torch fit $m $o $L --loss mse_loss --epochs 2 | to json --raw | print")
    assert (_losses(json.loads(out)), code, handed) == (want, 0, []), err
    out, code, handed, err = callers.run("nu", nu_make + 'torch "fit" $m $o $L "--epochs" 2 | to json --raw | print')
    rows = [json.loads(r) if isinstance(r, str) else r for r in json.loads(out)]
    assert code == 0 and handed and handed[0].startswith("fit "), err  # by name: handed over to the client
    assert _losses(rows) == want
    for replies in ((), ("follow",)):  # the API: the daemon follows it (rows at the end), or the caller polls
        m, o, L = _api_objects(sh, x, y)
        status, reply = post(sh.socket, "fit", {"args": [m, o, L], "kwargs": {"epochs": 2}}, replies)
        rows = _api_rows(sh, reply)
        assert status == 200 and _losses(rows) == want, replies


def _api_objects(sh, x, y):
    sh("torch manual_seed 5")
    m = sh("torch nn linear 2 1")
    return m, sh("torch optim sgd %s --lr 0.1" % m), sh("torch data loader $(torch data tensors %s %s) --batch_size 4"
                                                       % (x, y))


def _api_rows(sh, reply):
    """A fit's rows from its JSON reply: the result, or the follow reply's polls to the end (JSON lines)."""
    if "result" in reply:
        return reply["result"]
    lines = reply["stdout"].splitlines()
    while "follow" in reply:
        status, reply = post(sh.socket, reply["follow"]["op"], {"args": reply["follow"]["args"],
                                                                 "kwargs": reply["follow"]["kwargs"]}, ("follow",))
        reply = reply.get("result", reply)
        lines += reply["stdout"].splitlines()
    return [json.loads(line) for line in lines]


# -- copy: the client relays objects between two daemons -------------------------------------------------------
def test_copy(sh, callers):
    a = sh.put(torch.tensor([1.0, 2.0]))
    for caller in SHELLS:
        out, code, handed, err = callers.run(caller, "torch value $(torch cp %s --to default)" % a)
        assert (out.strip(), code) == ("[1.0,2.0]", 0), (caller, err)
        assert handed == ([] if caller == "client" else ["cp %s --to default" % a]), caller
    for script in ("torch value (torch cp %s --to default) | to json --raw | print" % a,
                   'torch value (torch "cp" %s "--to" "default") | to json --raw | print' % a):
        out, code, handed, err = callers.run("nu", script)
        assert (json.loads(out), code) == ([1.0, 2.0], 0) and handed and handed[0].startswith("cp "), (script, err)
    assert post(sh.socket, "cp", {"args": [a], "kwargs": {"to": "default"}})[1]["error"]["code"] == "needs_client"
    assert post(sh.socket, "cp", {"args": [a], "kwargs": {"to": "default"}}, ("handover",))[1]["handover"] == {
        "op": "cp", "needs": "copy", "message": "torch: cp: needs the `torch` client (it carries out the copy reply); "
                                                "nothing ran [needs_client]"}
    assert post(sh.socket, "cp", {"args": [a], "kwargs": {"to": "default"}}, ("copy",))[1]["copy"] == {
        "handles": [a], "to": "default", "keep": False, "force": False}


# -- await: `daemon stop` returns once the daemon has exited (the client waits; others hand over or skip) ---------
def test_await(fresh_sh, callers):
    for caller in SHELLS + ("nu",):
        s = fresh_sh()
        script = ('torch daemon stop | print; print (if ($env.TORCHSH_SOCKET | path exists) { "still" } else { "gone" })'
                  if caller == "nu" else 'torch daemon stop; test -S "$TORCHSH_SOCKET" && echo still || echo gone')
        out, code, handed, err = callers.run(caller, script, {"TORCHSH_SOCKET": s.socket})
        lines = out.splitlines()
        assert code == 0 and lines[0].startswith("torchd stopped (pid ") and lines[-1] == "gone", (caller, err)
        assert handed == ([] if caller == "client" else ["daemon stop" + (" --json" if caller == "nu" else "")]), caller
    s = fresh_sh()
    status, reply = post(s.socket, "daemon.stop", {})  # lists nothing: SKIP, the answer comes before the exit
    assert status == 200 and reply["result"].startswith("torchd stopping (pid ")


# -- env: resend with the caller's variables (`nu-module --install` writes into the caller's HOME) ----------------
def test_env(sh, callers):
    home = os.path.join(callers.folder, "home")
    installed = os.path.join(home, ".config", "nushell", "scripts", "torch.nu")
    for caller in SHELLS + ("nu",):
        os.makedirs(home, exist_ok=True)
        script = "torch nu-module --install" + (" | print" if caller == "nu" else "")
        out, code, handed, err = callers.run(caller, script, {"HOME": home, "XDG_CONFIG_HOME": ""})
        assert code == 0 and installed in out and os.path.isfile(installed), (caller, err)
        assert handed == ([] if caller == "client" else ["nu-module --install" + (" --json" if caller == "nu" else "")])
        shutil.rmtree(home)
    argv = cli_body(["nu-module", "--install"])
    status, headers, body = raw(sh.socket, "POST", "/v1/cli", argv, replies=())  # lists nothing: refused
    assert headers[protocol.H_EXIT] == "2" and body.decode().endswith("[needs_client]\n")
    status, headers, body = raw(sh.socket, "POST", "/v1/cli", argv, replies=("env",))
    assert headers[protocol.H_ENV] == "HOME XDG_CONFIG_HOME" and not body


# -- handover: a caller that lists it runs the client; one that lists nothing is refused with needs_client -------
def test_handover(sh, callers):
    a = sh.put(torch.tensor([1.0]))
    held = sh("torch tensors -q")
    status, headers, body = raw(sh.socket, "POST", "/v1/cli", cli_body(["cp", a, "--to", "default"]), replies=())
    assert headers[protocol.H_EXIT] == "2" and body.decode().endswith("[needs_client]\n")
    assert protocol.H_HANDOVER not in headers and protocol.H_COPY not in headers
    status, headers, body = raw(sh.socket, "POST", "/v1/cli", cli_body(["cp", a, "--to", "default"]),
                                replies=("handover",))
    assert headers[protocol.H_HANDOVER] == "copy" and headers[protocol.H_EXIT] == "2"  # nothing ran: one line
    assert body.decode() == "torch: cp: needs the `torch` client (it carries out the copy reply); nothing ran " \
                            "[needs_client]\n"
    assert sh("torch tensors -q") == held  # nothing ran, nothing was made
