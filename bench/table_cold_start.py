"""Cold-start cost of the op table (issue 3): not a test, prints numbers.

For each of N rounds: stop the daemon, run one `torch zeros '[1]'` (which auto-starts torchd) and time
it, once with the table cache off (the table is built from PyTorch's registry at start) and once with
a warm cache; the daemon reports its own table-build time in `torch daemon status --json`. Also times
build_table() in-process both ways. Usage: .venv/bin/python bench/table_cold_start.py [ROUNDS]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.path.dirname(sys.executable)


def cold_start(env):
    subprocess.run([BIN + "/torch", "daemon", "stop"], env=env, capture_output=True)
    deadline = time.time() + 20
    while os.path.exists(env["TORCHSH_SOCKET"]) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # let the old daemon release its lock and exit
    t0 = time.perf_counter()
    subprocess.run([BIN + "/torch", "zeros", "[1]"], env=env, capture_output=True, check=True)
    wall = time.perf_counter() - t0
    status = json.loads(subprocess.run([BIN + "/torch", "daemon", "status", "--json"], env=env,
                                       capture_output=True, text=True, check=True).stdout)
    return wall, status.get("table_build_ms", float("nan")) / 1000


def main(rounds):
    folder = tempfile.mkdtemp(prefix="tsh-bench-")
    base = dict(os.environ, TORCHSH_SOCKET=os.path.join(folder, "d.sock"), TORCHSH_TTL="5m")
    cache_dir = os.path.join(folder, "cache")
    modes = {"no cache (table built at start)": dict(base, TORCHSH_TABLE_CACHE="off"),
             "warm cache": dict(base, TORCHSH_TABLE_CACHE=cache_dir)}
    cold_start(modes["warm cache"])  # fills the cache
    for name, env in modes.items():
        runs = [cold_start(env) for _ in range(rounds)]
        walls, tables = [r[0] for r in runs], [r[1] for r in runs]
        print("%-32s first command %6.0f ms median (min %4.0f)   table %4.0f ms median; "
              "without the table: %6.0f ms" % (name, 1000 * statistics.median(walls), 1000 * min(walls),
                                               1000 * statistics.median(tables),
                                               1000 * statistics.median(w - t for w, t in runs)))
    subprocess.run([BIN + "/torch", "daemon", "stop"], env=base, capture_output=True)
    code = ("import time,os;os.environ['TORCHSH_TABLE_CACHE']=%r;import torch;from torchsh.table import build_table;"
            "build_table();t=time.perf_counter();build_table();print(time.perf_counter()-t)")
    for label, setting in (("in-process build_table(), no cache", "off"), ("in-process build_table(), cache",
                                                                         cache_dir)):
        secs = [float(subprocess.run([sys.executable, "-c", code % setting], capture_output=True, text=True,
                                     check=True).stdout) for _ in range(3)]
        print("%-36s %6.0f ms median" % (label, 1000 * statistics.median(secs)))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
