"""Model files: `torch model inspect` of a 2 GiB safetensors file, which reads its header alone.

The file is sparse (a header and 2 GiB of holes): the command must not read its data, so its cost is a
command's floor. Reference: `torch daemon status` on the same daemon, a command that touches no file.
"""
import json
import os
import tempfile

from bench.common import CLIENT, interleaved, row, spawn_ms

INSPECT_TARGET_MS = 50.0  # issue 24: under 50 ms for a multi-GB safetensors file


def _sparse_safetensors(folder, gib=2):
    path = os.path.join(folder, "big.safetensors")
    header = json.dumps({"w": {"dtype": "F32", "shape": [gib << 28], "data_offsets": [0, gib << 30]}}).encode()
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        f.truncate(8 + len(header) + (gib << 30))
    return path


def run(daemon, quick=False):
    with tempfile.TemporaryDirectory(prefix="tshm-") as folder:
        path = _sparse_safetensors(folder)
        cmd, ref = [CLIENT, "model", "inspect", path], [CLIENT, "daemon", "status"]
        for _ in range(3):
            spawn_ms(cmd, daemon.env), spawn_ms(ref, daemon.env)
        subj, refs, noise = interleaved(lambda: spawn_ms(cmd, daemon.env), lambda: spawn_ms(ref, daemon.env),
                                        rounds=2 if quick else 4, per_round=10 if quick else 20)
    r = row("model inspect: a 2 GiB safetensors file (spawn->exit)", subj, "torch daemon status", refs,
            target="<= %g ms" % INSPECT_TARGET_MS, noise=noise)
    r["met"] = r["median_ms"] <= INSPECT_TARGET_MS
    return [r]
