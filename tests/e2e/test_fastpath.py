"""The fast bash path (`eval "$(torch init bash)"`): its security (token, loopback only, server
proof) and its fidelity to the Python client, for the function and for the installed launcher, whose bash
part is the same functions (tests/e2e/test_launcher.py has the launcher's own). The whole CLI suite also runs
through it: scripts/test.sh runs tests/e2e a second time with TORCHSH_TEST_PRELUDE='eval "$(torch init bash)"'.
The zsh function and `torch init` for other shells: test_fastpath_zsh.py.
"""
import json
import os
import socket
import stat
import subprocess

import pytest
import torch

from support.planted import squat
from support.pyclient import PYCLIENT
from support.required import require_tool


INIT = 'eval "$(torch init bash)"\n'


# The two fast paths, each compared with the Python client: the function, and `torch` on PATH (the launcher).
WAYS = {"function": INIT, "launcher": ""}


def _token_file(sh):
    return sh.socket[:-len(".sock")] + ".fast"


def _enable(sh):
    sh(INIT + "type -t torch")
    port, client_token, server_token = open(_token_file(sh)).read().split()
    return int(port), client_token, server_token


def _raw(port, request):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def _cli_request(argv, token=None, cwd=b"/"):
    body = b"\0".join([b"torchsh-cli-1", cwd, b"1", b"", b"0", b""] + argv)
    head = b"POST /v1/cli HTTP/1.1\r\n"
    if token is not None:
        head += b"Torchsh-Token: " + token.encode() + b"\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _census(sh):
    return sorted(row["handle"] for row in json.loads(sh("command torch tensors --json")))


def test_init_bash_defines_a_torch_function_and_a_private_token_file(sh):
    assert sh(INIT + "type -t torch") == "function"
    path = _token_file(sh)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    port, client_token, server_token = open(path).read().split()
    assert int(port) > 0 and len(client_token) == 32 and len(server_token) == 32 and client_token != server_token


def test_the_port_listens_on_loopback_only(sh):
    port, _, _ = _enable(sh)
    listening = []
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, local_port = local.split(":")
        if int(local_port, 16) == port and state == "0A":  # 0A: LISTEN
            listening.append(address)
    assert listening == ["0100007F"]  # 127.0.0.1, little-endian hex; never 00000000 (all addresses)


@pytest.mark.parametrize("token", [None, "", "0" * 32, "wrong"], ids=["missing", "empty", "zeros", "short"])
def test_a_request_without_the_right_token_is_refused_and_does_nothing(sh, token):
    port, _, server_token = _enable(sh)
    before = _census(sh)
    reply = _raw(port, _cli_request([b"randn", b"[3]"], token))
    assert reply.startswith(b"HTTP/1.1 403 ")
    assert server_token.encode() not in reply  # a refused caller learns nothing
    assert _census(sh) == before  # nothing was made
    reply = _raw(port, _cli_request([b"daemon", b"stop"], token))
    assert reply.startswith(b"HTTP/1.1 403 ")
    assert sh("command torch daemon status --json") != ""  # still running


def test_a_request_with_the_token_runs_and_the_reply_proves_the_server(sh):
    port, client_token, server_token = _enable(sh)
    reply = _raw(port, _cli_request([b"ones", b"[2]"], client_token))
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and server_token.encode() in head
    assert body.startswith(b"tensor://")
    assert sh("torch value %s" % body.decode().strip()) == "[1.0,1.0]"


def test_the_fast_path_serves_only_the_cli_endpoint(sh):
    port, client_token, _ = _enable(sh)
    reply = _raw(port, b"GET /v1/tensors HTTP/1.1\r\nTorchsh-Token: %s\r\n\r\n" % client_token.encode())
    assert reply.startswith(b"HTTP/1.1 404 ")


@pytest.mark.parametrize("way", WAYS)
def test_output_errors_and_exit_codes_equal_the_python_client(sh, way):
    a = sh.put(torch.tensor([[1.0, -2.5], [3.25, 4.0]]))
    for cmd in ["torch value %s" % a, "torch add %s %s --json" % (a, a), "torch add %s '[1'" % a,
                "torch nosuchop", "torch value %s --format csv" % a, "torch print %s" % a, "torch --help",
                "torch --socket %s value %s" % (sh.socket, a), "torch", "torch scope -- sh -c 'exit 7'"]:
        fast = sh.run(WAYS[way] + cmd)
        real = sh.run(cmd.replace("torch", PYCLIENT, 1))
        if "add %s %s" % (a, a) in cmd:  # each run makes a new handle
            assert fast.out.startswith('"tensor://') and real.out.startswith('"tensor://')
            fast.out = real.out = ""
        assert (fast.out, fast.err, fast.code) == (real.out, real.err, real.code), cmd


@pytest.mark.parametrize("way", WAYS)
def test_binary_output_is_byte_exact(sh, way):
    a = sh.put(torch.arange(300, dtype=torch.float32).reshape(3, 100))  # npy bytes include NUL and 0x80+
    fast, real = sh.tmp("fast.npy"), sh.tmp("real.npy")
    sh(WAYS[way] + "torch value %s --format npy > %s; %s value %s --format npy > %s" % (a, fast, PYCLIENT, a, real))
    assert open(fast, "rb").read() == open(real, "rb").read()


@pytest.mark.parametrize("way", WAYS)
def test_stdin_lines_are_read_without_consuming_the_rest(sh, way):
    a = sh.put(torch.tensor([1.0, 2.0]))
    listing = sh.tmp("handles")
    with open(listing, "w") as f:
        f.write("%s\n\n  %s  \n%s\n" % (a, a, a))
    out = sh(WAYS[way] + "while read -r h; do torch add $h 1 | torch value; done < %s" % listing)
    assert out == "[2.0,3.0]\n[2.0,3.0]\n[2.0,3.0]"


@pytest.mark.parametrize("way", WAYS)
def test_exec_block_form_runs_the_command_and_keeps_its_status(sh, way):
    r = sh.run(WAYS[way] + "torch scope -- bash -c 'torch randn \"[2]\" >/dev/null; exit 7'")
    real = sh.run(PYCLIENT + " scope -- bash -c 'torch randn \"[2]\" >/dev/null; exit 7'")
    assert (r.out, r.err, r.code) == (real.out, real.err, real.code) == ("", "", 7)


def test_the_function_starts_the_daemon_and_turns_the_fast_path_on(fresh_sh):
    s = fresh_sh(start=False)
    out = s(_function_only(s) + "h=$(torch ones '[2]')\n"  # no daemon: the real client starts one
            + "PATH=/nonexistent torch value $h")            # the fast path alone: no client on PATH
    assert out == "[1.0,1.0]"
    assert stat.S_IMODE(os.stat(_token_file(s)).st_mode) == 0o600


@pytest.mark.parametrize("way", WAYS)
def test_a_reply_without_the_server_token_is_never_acted_on(fresh_sh, way):
    """A program that takes the port after torchd exited learns a dead token and cannot run anything."""
    s = fresh_sh(start=False)
    impostor = _impostor(s)
    pwned = s.tmp("pwned")
    exec_body = ("0\n0\ntouch\n%s\n" % pwned).encode()
    forged = b"HTTP/1.1 200 OK\r\nContent-Length: %10d\r\nTorchsh-Fast: %s x %11d %11d\r\n\r\n" % (
        len(exec_body), b"c" * 32, 0, len(exec_body)) + exec_body

    heard = squat(impostor, forged)
    out = s((_function_only(s) if way == "function" else "") + "torch ones '[2]' | torch value")
    impostor.close()
    assert out == "[1.0,1.0]"  # the real client ran it instead (and started torchd)
    assert not os.path.exists(pwned)
    assert heard and not any(b"ones" in h for h in heard)  # the argv never left for an unproven server


@pytest.mark.slow
@pytest.mark.parametrize("way", list(WAYS) + ["zsh"])
def test_a_port_that_never_answers_is_given_up_on_and_the_real_client_runs_the_command(fresh_sh, way):
    """torchd died and another program took its port; it accepts and says nothing. The function waits
    FAST_CONTINUE_S for the server's proof, not for ever, and never sends argv: the real client runs it."""
    s = fresh_sh(start=False)
    impostor = _impostor(s)
    heard = squat(impostor, None)
    try:  # the timeouts guard the test from a hang: the assertions are on what came out
        if way == "zsh":
            from torchsh.shells.init_zsh import script
            out = subprocess.run([require_tool("zsh"), "-f", "-c", script() + "torch ones '[2]' | torch value"],
                                 env=s.env, cwd=s.folder, capture_output=True, stdin=subprocess.DEVNULL,
                                 timeout=60, text=True).stdout.strip()
        else:
            out = s((_function_only(s) if way == "function" else "") + "torch ones '[2]' | torch value", timeout=60)
    finally:
        impostor.close()
    assert out == "[1.0,1.0]"  # the real client ran it (and started torchd)
    assert heard and not any(b"ones" in h for h in heard)  # the argv never left for the silent port


def _impostor(s):
    """A listener on a port of its own, which s's token file names (as a dead torchd's file would, its port taken)."""
    impostor = socket.socket()
    impostor.bind(("127.0.0.1", 0))
    impostor.listen(8)
    with open(_token_file(s), "w") as f:
        f.write("%d %s %s\n" % (impostor.getsockname()[1], "a" * 32, "b" * 32))
    os.chmod(_token_file(s), 0o600)
    return impostor


def _function_only(s):
    """The function text, got from a throwaway daemon so the test's own socket stays untouched."""
    from torchsh.shells.init_bash import script
    return script() + "\n"


def _sleeping(group):
    """True once a `sleep` of process group `group` runs."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if int(fields[2]) == group and os.path.basename(argv0) == b"sleep":
            return True
    return False


def _interrupted_block(sh, script, marker):
    """Run script in its own process group, Ctrl-C it (SIGINT to the group) once marker exists and the
    block's `sleep` runs. (Sooner, it may land as bash forks the sleep: bash then waits the sleep out, as
    `bash -c '/bin/echo x > m; sleep 60'` does when Ctrl-C'd just after m is written.)"""
    import signal
    import time
    p = subprocess.Popen(["bash", "-c", script], env=sh.env, cwd=sh.folder, start_new_session=True, text=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (os.path.exists(marker) and os.path.getsize(marker) and _sleeping(p.pid)) \
            and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return out, err, p.returncode, open(marker).read().strip()


def test_ctrl_c_in_a_block_form_ends_the_scope_and_keeps_the_shells_trap_like_the_client(sh):
    results = []
    for setup, torch_word in ((INIT, "torch"), ("", "torch"), ("", PYCLIENT)):  # function, launcher, Python client
        marker = sh.tmp("made")
        script = (setup + "trap 'echo trapped' INT\n"
                  "%s scope -- bash -c 'torch randn \"[7]\" > %s; sleep 60'\n"
                  "echo \"status $?\"; trap -p INT" % (torch_word, marker))
        out, err, code, made = _interrupted_block(sh, script, marker)
        assert made.startswith("tensor://") and made not in _census(sh)  # the scope ended: freed
        results.append((out, err, code))
    function, launcher, real = results
    assert function == launcher == real == ("trapped\nstatus 130\ntrap -- 'echo trapped' SIGINT\n", "", 0)
