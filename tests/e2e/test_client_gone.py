"""A request whose client is gone before its reply could be delivered frees what it made, as PostgreSQL
rolls back a disconnected client's transaction (docs/security.md, "Nothing you made is lost silently"):
a `kill -9` of a client mid-op leaves no object held by nobody."""
import json
import signal
import socket
import subprocess

from test_server_limits import LONG, bg, status, wait_for


def _handles(sh):
    return sorted(r["handle"] for r in json.loads(sh("torch tensors --json")))


def _log(sh):
    return open(sh.socket.replace(".sock", ".log")).read()


def test_a_client_killed_while_its_op_runs_leaves_no_object_behind(fresh_sh):
    sh = fresh_sh()
    m = sh("torch randn '[2000,2000]'")
    victim = bg(sh, *[m if a is None else a for a in LONG])
    wait_for(lambda: (status(sh)["busy"] or {}).get("op") == "matrix_power", "the op to start")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    wait_for(lambda: not status(sh)["busy"], "the op to finish", timeout=60)
    wait_for(lambda: _handles(sh) == [m], "the op's output to be freed")
    assert "made by POST /v1/cli: its client (peer pid %d) left before its reply" % victim.pid in _log(sh)


def test_an_api_caller_that_hangs_up_mid_op_gets_its_outputs_freed_and_others_keep_theirs(fresh_sh):
    sh = fresh_sh()
    m = sh("torch randn '[2000,2000]'")
    body = json.dumps({"tensors": [m], "args": [16777215]}).encode()
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(sh.socket)
        conn.sendall(b"POST /v1/ops/matrix_power HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        wait_for(lambda: (status(sh)["busy"] or {}).get("op") == "matrix_power", "the op to start")
    kept = sh("torch ones 3")  # another client's, made while the abandoned op ran: it stays
    wait_for(lambda: not status(sh)["busy"], "the op to finish", timeout=60)
    wait_for(lambda: _handles(sh) == sorted([m, kept]), "the op's output to be freed")


def test_a_bash_function_killed_while_its_op_runs_leaves_no_object_behind(fresh_sh):
    """The fast path is TCP, where a first send after the peer left still succeeds: the worker asks first."""
    sh = fresh_sh()
    m = sh('eval "$(torch init bash)"; torch randn \'[2000,2000]\'')  # the fast path is on from here
    before = _handles(sh)
    victim = subprocess.Popen(["bash", "-c", 'eval "$(torch init bash)"; torch matrix_power %s 16777215' % m],
                              env=sh.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: (status(sh)["busy"] or {}).get("op") == "matrix_power", "the op to start")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    wait_for(lambda: not status(sh)["busy"], "the op to finish", timeout=60)
    wait_for(lambda: _handles(sh) == before, "the op's output to be freed")
    assert "made by POST /v1/cli: its client (peer pid None) left before its reply" in _log(sh)
