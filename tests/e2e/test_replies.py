"""Every row of protocol.REPLIES against every caller of the daemon: the Python `torch` client, the installed
launcher (bash over the fast path), the bash function, the zsh function, torch.nu's typed commands and its
commands by name, and the JSON API. Each pair carries
the reply out with the client's stdout and exit status, or hands the command over to the client before
anything ran (seen here through a `torch` shim on PATH that logs each run), or is refused with the row's
code. A new row without a case here fails test_every_row_has_a_case.

These tests run real bash, zsh and nu (scripts/bootstrap.sh --with-shells installs them; CI as root).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from torchsh import protocol
from support.apicall import UnixHTTPConnection
from support.pyclient import PYCLIENT

pytestmark = pytest.mark.slow  # several shells and daemons a test: tests/conftest.py's rule

BIN = os.path.dirname(sys.executable)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NU = os.path.join(ROOT, ".tools", "nu", "node_modules", "@nushell", "linux-x64", "bin", "nu")
MODULE = os.path.join(ROOT, "src", "torchsh", "shells", "torch.nu")
CASES = ("stdin", "exec", "follow", "copy", "upload", "download", "await", "env", "handover")
SHELLS = ("client", "launcher", "bash", "zsh")  # the callers a bash or zsh script's `torch` can be


class Unseen(list):
    """The launcher's handovers: it runs the Python client in its own process (exec), with no PATH lookup a shim
    could log, so what it handed over is not seen; its output and status are checked all the same."""

    def __eq__(self, other):
        return isinstance(other, list)

    __hash__ = None


def test_every_row_has_a_case():
    assert tuple(r.name for r in protocol.REPLIES) == CASES


class Callers:
    """Runs one piece of shell text (written once for bash and zsh, once for nu) through each caller."""

    def __init__(self, sh, folder):
        self.sh, self.folder = sh, folder
        self.log = os.path.join(folder, "handed-over")
        shim = os.path.join(folder, "shim")
        os.makedirs(shim, exist_ok=True)
        with open(os.path.join(shim, "torch"), "w") as f:  # logs what it is run for, then runs the client
            f.write('#!/bin/sh\necho "$*" >> %s\nexec %s/torch "$@"\n' % (self.log, BIN))
        os.chmod(os.path.join(shim, "torch"), 0o755)
        self.env = dict(sh.env, PATH=shim + os.pathsep + sh.env["PATH"])

    def handed_over(self):
        """The command lines the client ran since the last call (the shim's log), emptied."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            lines = [line for line in f.read().splitlines() if not line.startswith("init ")]  # the function's own
        os.unlink(self.log)
        return lines

    def run(self, caller, script, env=None, stdin=None):
        """(stdout, exit status, the command lines handed over to the client) of script run by caller."""
        self.handed_over()
        env = dict(self.env, **(env or {}))
        if caller == "client":  # the Python client itself, no shim
            argv, env["PATH"] = ["bash", "-c", 'torch() { %s "$@"; }\n%s' % (PYCLIENT, script)], self.sh.env["PATH"]
        elif caller == "launcher":  # the installed `torch`, no shim (it hands over within its own process)
            argv, env["PATH"] = ["bash", "-c", script], self.sh.env["PATH"]
        elif caller == "bash":
            argv = ["bash", "-c", 'eval "$(torch init bash)"\n' + script]
        elif caller == "zsh":
            argv = [shutil.which("zsh") or pytest.fail("zsh is not installed: scripts/bootstrap.sh --with-shells"),
                    "-f", "-c", 'eval "$(torch init zsh)"\n' + script]
        else:  # nu: typed commands, or by name (`torch "op" …` goes to the module's main)
            path = os.path.join(self.folder, "script.nu")
            with open(path, "w") as f:
                f.write("use %s\n%s\n" % (MODULE, script))
            argv = [NU, "--no-config-file", path]
        p = subprocess.run(argv, env=env, cwd=self.folder, capture_output=True, text=True, timeout=300,
                           input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
        handed = self.handed_over()
        return p.stdout, p.returncode, Unseen() if caller == "launcher" else handed, p.stderr


@pytest.fixture
def callers(sh, tmp_path):
    return Callers(sh, str(tmp_path))


def raw(sock, method, path, body=b"", replies=None, headers=None):
    """(status, headers, body bytes) of one request with a Torchsh-Replies header listing `replies`."""
    conn = UnixHTTPConnection(sock)
    hdrs = dict(headers or {})
    if replies is not None:
        hdrs["Torchsh-Replies"] = " ".join(replies)
    try:
        conn.request(method, path, body=body, headers=hdrs)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def cli_body(argv, tty=True, stdin=None):
    return protocol.encode_cli_request([a.encode() for a in argv], b"/", tty, [], stdin)


def post(sock, op, body, replies=None):
    status, _, text = raw(sock, "POST", "/v1/ops/" + op, json.dumps(body).encode(), replies)
    return status, json.loads(text)


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


# -- upload and download: the caller's files on a remote context ------------------------------------------------
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
