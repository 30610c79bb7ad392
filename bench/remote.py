"""Per-command latency through a context (docs/remote.md) against the local socket (issue 14).

One `torch add $a $b` (the standalone client: spawn -> exit) on a TLS context on loopback (a second torchd
with --listen tls://127.0.0.1:PORT, reached through the context's forwarder: Unix socket -> TLS 1.3 ->
the daemon's own Unix socket), interleaved with the same command on a local daemon's socket. The ratio is
what a context costs per command on loopback; a real network adds its round trips (about three per
command: TCP connect, TLS handshake, token). helper C adds the ssh context's row with `latency_row`.

Run alone: .venv/bin/python bench/remote.py [--quick]; bench/run.py runs it as the `remote` group.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

from bench.common import CLIENT, interleaved, row, spawn_ms, value_row  # noqa: E402


def _handles(env, n=2):
    out = []
    for _ in range(n):
        p = subprocess.run([CLIENT, "randn", "[3]"], env=env, capture_output=True, text=True, check=True)
        out.append(p.stdout.strip())
    return out


def latency_row(label, context_env, local_env, quick=False):
    """One row: `torch add $a $b` under context_env against the same under local_env (each its own handles)."""
    a, b = _handles(context_env)
    la, lb = _handles(local_env)
    subject, reference = [CLIENT, "add", a, b], [CLIENT, "add", la, lb]
    for _ in range(5):  # warm: the forwarder, the page cache, both daemons' pools
        spawn_ms(subject, context_env), spawn_ms(reference, local_env)
    subj, refs, noise = interleaved(lambda: spawn_ms(subject, context_env), lambda: spawn_ms(reference, local_env),
                                    rounds=3 if quick else 5, per_round=10 if quick else 30)
    return row("%s: one `torch add $a $b` (spawn->exit)" % label, subj, "the same on the local socket", refs,
               noise=noise, note="loopback; the client, the forwarder and both daemons share this machine's cores")


def cp_row(local_env, folder, quick=False):
    """`torch cp` of one float32 tensor to the TLS context (export, the client's relay through the forwarder
    and TLS, import there), in MB/s, against `torch save` of the same tensor to a local file."""
    import statistics
    import time
    mib = 16 if quick else 64
    ctx_env = dict(local_env, TORCHSH_CONTEXT="bench")
    h = subprocess.run([CLIENT, "randn", str(mib * 262144)], env=local_env, capture_output=True, text=True,
                       check=True).stdout.strip()
    target = os.path.join(folder, "t.safetensors")
    cp_s, save_s = [], []
    for _ in range(3 if quick else 5):
        t0 = time.perf_counter()
        copy = subprocess.run([CLIENT, "cp", h, "--to", "bench"], env=local_env, capture_output=True, text=True,
                              check=True).stdout.strip()
        cp_s.append(time.perf_counter() - t0)
        subprocess.run([CLIENT, "free", copy], env=ctx_env, check=True, capture_output=True)
        t0 = time.perf_counter()
        subprocess.run([CLIENT, "save", h, target], env=local_env, check=True, capture_output=True)
        save_s.append(time.perf_counter() - t0)
        os.unlink(target)
    mb = mib * 1.048576
    return value_row("tls context (loopback): `torch cp` of a %d MiB tensor" % mib, mb / statistics.median(cp_s),
                     "MB/s", "`torch save` of it to a local file", mb / statistics.median(save_s),
                     note="medians of %d; the relay streams raw bytes in 1 MiB pieces" % len(cp_s))


def tls_rows(quick=False):
    from support.remotes import TLSRemote, caller_env, private_folder, stop_all
    folder = private_folder("tshb-tls-")
    remote = TLSRemote(folder)
    local_env = caller_env(folder, TORCHSH_SOCKET=os.path.join(folder, "local.sock"))
    try:
        remote.start()
        subprocess.run([CLIENT, "daemon", "start"], env=local_env, check=True, capture_output=True)
        subprocess.run([CLIENT, "context", "create", "bench", "--host", remote.url, "--fingerprint",
                        remote.fingerprint, "--token-file", remote.token_file],
                       env=local_env, check=True, capture_output=True)
        return [latency_row("tls context (loopback)", dict(local_env, TORCHSH_CONTEXT="bench"), local_env, quick),
                cp_row(local_env, folder, quick)]
    finally:
        remote.stop()
        stop_all(folder)
        subprocess.run([CLIENT, "daemon", "stop"], env=local_env, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def run(quick=False):
    return tls_rows(quick)


if __name__ == "__main__":
    from bench.run import table
    import datetime
    import platform
    rows = [dict(r, group="remote") for r in run(quick="--quick" in sys.argv)]
    print(table(rows, {"when": datetime.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
                       "cpus": os.cpu_count(), "python": sys.version.split()[0], "device": "cpu",
                       "quick": "--quick" in sys.argv, "loadavg_before": os.getloadavg(),
                       "loadavg_after": os.getloadavg(), "skipped": []}))
