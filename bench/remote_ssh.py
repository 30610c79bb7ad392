"""Per-command latency through an ssh context (issue 14) against the local socket, on loopback.

A throwaway sshd on 127.0.0.1 (tests/support/sshd.py's harness) plays the remote host; ssh.ensure_forwarder starts
the remote daemon and the one OpenSSH forwarder. Rows:
  (a) one `torch add $a $b` (spawn -> exit) through the forwarder's socket, against the same command on a
      local daemon's socket, interleaved. The difference is the forwarder's hop: the client's request and
      the reply each cross ssh's encryption twice (client -> ssh -> sshd -> daemon). Target: <= 2 ms more.
  (b) one keep-alive `POST /v1/ops/add` through each socket (no process start): the hop alone.
  (c) the first command's one-time cost: ensure_forwarder with nothing running (an ssh login that starts
      the remote daemon, then the forwarder's login and its first reply), as one figure per round.
Standalone: `.venv/bin/python bench/remote_ssh.py [--quick]`; run(quick) -> rows for bench/run.py.
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from bench.api import Conn  # noqa: E402
from bench.common import CLIENT, Daemon, interleaved, row, spawn_ms  # noqa: E402

HOP_TARGET_MS = 2.0


def run(quick=False):
    from support import sshd  # tests/support/sshd.py: the harness the ssh tests use
    from torchsh.client.contexts import ssh
    reason = sshd.skip_reason()
    if reason:
        print("remote_ssh: skipped: %s" % reason, file=sys.stderr)
        return []
    with Daemon() as local, sshd.running_sshd() as host:
        rows = [_first_command(host, ssh, rounds=2 if quick else 4)]
        sock = host.local_socket("bench")
        ssh.ensure_forwarder(host.context("bench"), sock)
        remote_env = dict(local.env, TORCHSH_SOCKET=sock)
        rows += _client_rows(local, remote_env, quick)
        rows += _api_rows(local, remote_env, quick)
        return rows


def _client_rows(local, remote_env, quick):
    rcmd = [CLIENT, "add", _cli(remote_env, "randn", "[3]"), _cli(remote_env, "randn", "[3]")]
    lcmd = [CLIENT, "add", local.cli("randn", "[3]"), local.cli("randn", "[3]")]
    for _ in range(5):  # warm the page cache, both daemons' pools and the forwarder
        spawn_ms(rcmd, remote_env), spawn_ms(lcmd, local.env)
    subj, ref, noise = interleaved(lambda: spawn_ms(rcmd, remote_env), lambda: spawn_ms(lcmd, local.env),
                                   rounds=3 if quick else 5, per_round=10 if quick else 30)
    r = row("ssh context: one `torch add $a $b` (spawn->exit)", subj, "the same on the local socket", ref,
            target="<= local + %g ms" % HOP_TARGET_MS, noise=noise)
    r["met"] = r["median_ms"] <= r["ref_median_ms"] + HOP_TARGET_MS
    return [r]


def _api_rows(local, remote_env, quick):
    conns = {}
    for name, env in (("local", local.env), ("remote", remote_env)):
        body = json.dumps({"tensors": [_cli(env, "randn", "[3]"), _cli(env, "randn", "[3]")]}).encode()
        conns[name] = (Conn(env["TORCHSH_SOCKET"]), body)

    def post_ms(name):
        conn, body = conns[name]
        t0 = time.perf_counter_ns()
        head, reply = conn.post(b"/v1/ops/add", body)
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("POST /v1/ops/add (%s): %s" % (name, reply[:200]))
        return (time.perf_counter_ns() - t0) / 1e6
    subj, ref, noise = interleaved(lambda: post_ms("remote"), lambda: post_ms("local"),
                                   rounds=3 if quick else 5, per_round=100 if quick else 400)
    for conn, _ in conns.values():
        conn.sock.close()
    r = row("ssh context: one keep-alive POST /v1/ops/add", subj, "the same on the local socket", ref,
            target="<= local + %g ms" % HOP_TARGET_MS, noise=noise)
    r["met"] = r["median_ms"] <= r["ref_median_ms"] + HOP_TARGET_MS
    return [r]


def _first_command(host, ssh, rounds):
    """ensure_forwarder from nothing: remote daemon stopped, no forwarder."""
    samples = []
    for i in range(rounds):
        remote_sock = host.remote_socket("cold%d" % i)
        sock = host.local_socket("cold%d" % i)
        t0 = time.perf_counter_ns()
        ssh.ensure_forwarder(host.context("cold%d" % i, socket=remote_sock), sock)
        samples.append((time.perf_counter_ns() - t0) / 1e6)
        ssh.stop_forwarder(sock)
        _cli(dict(os.environ, TORCHSH_SOCKET=remote_sock), "daemon", "stop")
    r = row("ssh context: first command's set-up (remote daemon start + forwarder)", samples, None, [],
            note="one-time per context, until the forwarder or the remote daemon stops")
    return r


def _cli(env, *argv):
    p = subprocess.run([CLIENT] + list(argv), env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("torch %s: %s" % (" ".join(argv), p.stderr.strip()))
    return p.stdout.strip()


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(json.dumps(r))
