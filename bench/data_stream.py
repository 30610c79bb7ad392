"""Streamed Parquet and memory-mapped Arrow (issue 40), each beside its reference in the same run.

Data: N rows of 16 float32 columns f0..f15 and an int64 `label` (0..3), row groups of 64k rows, made here (seed 0)
in a temporary folder removed at the end. Model: `linear 16 4`, SGD, cross_entropy: a step that costs next to
nothing, so a fit epoch measures the data path.

  (a) RSS: a daemon started with TORCHSH_MAX_MEMORY=BUDGET trains one epoch (`torch fit`, --batch_size 1024,
      --shuffle --shuffle_buffer 100000) over a streamed Parquet set of 10x BUDGET on disk (--quick: a tenth of
      it) while its RSS (/proc/PID/statm) is sampled every 0.25 s: min, max, first, last, and the largest
      deviation from the median; goal: within +-10 %.
  (b) throughput, rows/s: one epoch of `torch fit` over `torch data loader $d --batch_size 1024 --num_workers W`
      (the launcher, as a user runs it) against a hand-written reference in a process of its own: a pyarrow
      IterableDataset (ParquetFile.iter_batches over its share of the row groups, split by get_worker_info,
      torch.from_numpy of the stacked columns) in DataLoader(batch_size=None, num_workers=W), the same model
      steps; W = 0, 2, 4; both in index order, and both shuffled (ours: --shuffle --shuffle_buffer 65536, one row
      group; the reference: row groups permuted, rows permuted within each group); goal: >= 0.9x.
  (c) Arrow open: `torch data open x.arrow --target label` of a 1 GiB Arrow IPC file (--quick: 128 MiB), whole
      call through the launcher, against `torch data info` of a small tensor dataset through the same launcher
      (the floor of a data call); the daemon's RSS growth beside it; goal: the difference < 50 ms, no copy.
(b)'s two sides each run on one intra-op thread (OMP_NUM_THREADS=1): on two shared cores PyTorch's default spins
on the core the other side needs (bench/lm.py saw the same); the cheap model gains nothing from a second thread.
Each side of (b) and (c) alternates with its reference, ROUNDS times; rows show medians over rounds.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from bench.common import CLIENT, PYTHON, ROOT, Daemon, spawn_ms, spread, value_row  # noqa: E402

FEATURES, CLASSES, GROUP, BATCH = 16, 4, 65536, 1024
BUDGET = 512 * 2**20          # the RSS row's daemon budget (TORCHSH_MAX_MEMORY)
ROW_BYTES = FEATURES * 4 + 8  # a row on disk, uncompressed: random floats barely compress
RSS_GOAL, RATE_GOAL, OPEN_GOAL_MS = 10.0, 0.9, 50.0
WORKERS = (0, 2, 4)


def write_parquet(path, rows, seed=0):
    """ROWS rows in row groups of GROUP rows, written one group at a time (this process never holds them all)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(seed)
    with pq.ParquetWriter(path, _schema()) as writer:
        for start in range(0, rows, GROUP):
            columns = _columns(rng, min(GROUP, rows - start))
            writer.write_table(pa.Table.from_arrays(columns, schema=_schema()), row_group_size=GROUP)
    return path


def _schema():
    import pyarrow as pa
    return pa.schema([("f%d" % i, pa.float32()) for i in range(FEATURES)] + [("label", pa.int64())])


def _columns(rng, n):
    """N rows' columns: FEATURES standard normal float32 ones, then the label."""
    import numpy as np
    import pyarrow as pa
    x = rng.standard_normal((n, FEATURES), dtype=np.float32)
    return [pa.array(x[:, i]) for i in range(FEATURES)] + [pa.array(rng.integers(0, CLASSES, n))]


def write_arrow(path, rows, seed=0):
    """The same rows as an Arrow IPC file, one record batch per GROUP rows."""
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(seed)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, _schema()) as writer:
        for start in range(0, rows, GROUP):
            columns = _columns(rng, min(GROUP, rows - start))
            writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=_schema()))
    return path


def rss_bytes(pid):
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class RssSampler(threading.Thread):
    """PID's resident set every PERIOD seconds until stop()."""

    def __init__(self, pid, period=0.25):
        super().__init__(daemon=True)
        self.pid, self.period, self.samples, self._done = pid, period, [], threading.Event()

    def run(self):
        while not self._done.is_set():
            self.samples.append(rss_bytes(self.pid))
            self._done.wait(self.period)

    def stop(self):
        self._done.set()
        self.join()
        return self.samples


def fit_handles(daemon, dataset, workers, shuffle_buffer=None):
    """(model, optimizer, loader) for one epoch of the cheap model over DATASET (a data:// handle)."""
    shuffle = ["--shuffle", "--shuffle_buffer", str(shuffle_buffer)] if shuffle_buffer else []
    loader = daemon.cli("data", "loader", dataset, "--batch_size", str(BATCH), "--num_workers", str(workers),
                        "--seed", "0", *shuffle)
    daemon.cli("manual_seed", "0")
    model = daemon.cli("nn", "sequential", "linear %d %d" % (FEATURES, CLASSES))
    return model, daemon.cli("optim", "sgd", model, "--lr", "0.01"), loader


def fit_epoch(daemon, dataset, workers, shuffle_buffer=None):
    """Seconds of one `torch fit` epoch through the launcher; the handles are freed after."""
    model, opt, loader = fit_handles(daemon, dataset, workers, shuffle_buffer)
    t0 = time.perf_counter()
    daemon.cli("fit", model, opt, loader, "--loss", "cross_entropy", "--epochs", "1", "--json")
    seconds = time.perf_counter() - t0
    daemon.cli("free", model, opt, loader)
    return seconds


def rss_row(quick):
    rows = (BUDGET // ROW_BYTES) * (1 if quick else 10)
    with tempfile.TemporaryDirectory(prefix="tshb-stream-") as folder:
        path = write_parquet(os.path.join(folder, "big.parquet"), rows)
        size = os.path.getsize(path)
        daemon = Daemon()
        daemon.env["TORCHSH_MAX_MEMORY"] = "%dMiB" % (BUDGET // 2**20)
        with daemon:
            pid = daemon.status()["pid"]
            dataset = daemon.cli("data", "open", path, "--stream", "--target", "label")
            model, opt, loader = fit_handles(daemon, dataset, 0, 100000)
            sampler = RssSampler(pid)
            sampler.start()
            daemon.cli("fit", model, opt, loader, "--loss", "cross_entropy", "--epochs", "1", "--json")
            samples = sampler.stop()
    mid = statistics.median(samples)
    deviation = 100 * max(abs(s - mid) for s in samples) / mid
    mib = lambda b: "%.0f" % (b / 2**20)  # noqa: E731
    warm = samples[len(samples) // 10:]  # past the first tenth: pyarrow's pool and the cache filled
    settled = 100 * max(abs(s - statistics.median(warm)) for s in warm) / statistics.median(warm)
    curve = " ".join(mib(samples[min(len(samples) - 1, len(samples) * k // 10)]) for k in range(11))
    note = ("RSS MiB over %d samples: min %s max %s first %s last %s median %s; past the first tenth +-%.1f %%; "
            "by tenths: %s; Parquet %.2f GiB = %.1fx budget" % (
                len(samples), mib(min(samples)), mib(max(samples)), mib(samples[0]), mib(samples[-1]), mib(mid),
                settled, curve, size / 2**30, size / BUDGET))
    return value_row("stream: daemon RSS over a fit epoch of %d rows (%.1f GiB Parquet, budget %d MiB), "
                     "max deviation from median" % (rows, size / 2**30, BUDGET // 2**20), deviation, "%",
                     "goal", RSS_GOAL, target="<= +-%g %%" % RSS_GOAL, met=deviation <= RSS_GOAL, note=note,
                     ratio=deviation / RSS_GOAL)


class ParquetBatches(torch.utils.data.IterableDataset):
    """The hand-written reference's dataset: an IterableDataset over one Parquet file's row groups, each worker
    its share (get_worker_info), batches from iter_batches, the columns stacked by torch.from_numpy."""

    def __init__(self, path, shuffle, seed=0):
        self.path, self.shuffle, self.seed = path, shuffle, seed

    def __iter__(self):
        import numpy as np
        import pyarrow.parquet as pq
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        pf = pq.ParquetFile(self.path)
        groups = list(range(pf.num_row_groups))
        if self.shuffle:
            groups = torch.randperm(len(groups), generator=torch.Generator().manual_seed(self.seed)).tolist()
        rows = torch.Generator().manual_seed(self.seed + 1 + worker)
        size = GROUP if self.shuffle else BATCH  # shuffled: a whole group, permuted, then cut into batches
        for record in pf.iter_batches(batch_size=size, row_groups=groups[worker::workers]):
            x = torch.from_numpy(np.stack([record.column(i).to_numpy() for i in range(FEATURES)], axis=1))
            y = torch.from_numpy(record.column(FEATURES).to_numpy())
            if not self.shuffle:
                yield x, y
                continue
            order = torch.randperm(len(y), generator=rows)
            for s in range(0, len(y), BATCH):
                yield x[order[s:s + BATCH]], y[order[s:s + BATCH]]


def reference_epoch(path, workers, shuffle):
    """One epoch of the reference with the fit's cheap steps: (seconds, rows)."""
    import torch.nn.functional as F
    dataset = ParquetBatches(path, shuffle)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rows, t0 = 0, time.perf_counter()
    for x, y in torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        rows += len(y)
    return time.perf_counter() - t0, rows


def reference(path, workers, shuffle):
    """reference_epoch in a fresh process (its threads would share the cores with the daemon's here)."""
    code = ("import json, sys; sys.path.insert(0, %r); from bench.data_stream import reference_epoch; "
            "print(json.dumps(reference_epoch(%r, %d, %r)))" % (ROOT, path, workers, shuffle))
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
    return json.loads(out)


def throughput_rows(quick):
    rows, rounds = (500_000, 1) if quick else (4_000_000, 3)
    out, daemon = [], Daemon()
    daemon.env["OMP_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory(prefix="tshb-stream-") as folder, daemon:
        path = write_parquet(os.path.join(folder, "set.parquet"), rows)
        dataset = daemon.cli("data", "open", path, "--stream", "--target", "label")
        for shuffle in ((False,) if quick else (False, True)):
            for workers in WORKERS:
                out.append(rate_row(daemon, dataset, path, rows, rounds, workers, shuffle))
    return out


def rate_row(daemon, dataset, path, rows, rounds, workers, shuffle):
    """One (b) row; a fit that fails is a row saying so (nan), not the end of the benchmark."""
    ours, theirs, failed = [], [], None
    for _ in range(rounds):
        try:
            ours.append(rows / fit_epoch(daemon, dataset, workers, GROUP if shuffle else None))
        except RuntimeError as e:
            failed = str(e).splitlines()[0][-160:]
        seconds, counted = reference(path, workers, shuffle)
        theirs.append(counted / seconds)
    ours_rate = statistics.median(ours) if ours else float("nan")
    ref_rate = statistics.median(theirs)
    return value_row("stream: fit epoch rows/s, %d rows Parquet, %s, num_workers %d" % (
        rows, "--shuffle --shuffle_buffer %d" % GROUP if shuffle else "index order", workers),
        ours_rate, "rows/s", "pyarrow IterableDataset + DataLoader, own process", ref_rate,
        target=">= %gx" % RATE_GOAL, met=ours_rate / ref_rate >= RATE_GOAL, noise=spread(theirs),
        note="our fit failed: %s" % failed if failed else "")


def arrow_row(quick):
    rows = (2**27 if quick else 2**30) // ROW_BYTES
    rounds = 3 if quick else 7
    with tempfile.TemporaryDirectory(prefix="tshb-stream-") as folder, Daemon() as daemon:
        path = write_arrow(os.path.join(folder, "x.arrow"), rows)
        small = daemon.cli("data", "tensors", daemon.cli("zeros", "4", "2"), daemon.cli("zeros", "4"))
        pid = daemon.status()["pid"]
        opens, floors, growth = [], [], []
        out_file = os.path.join(folder, "handle")
        for _ in range(rounds):
            before = rss_bytes(pid)
            opens.append(spawn_ms([CLIENT, "data", "open", path, "--target", "label"], daemon.env, stdout=out_file))
            growth.append(rss_bytes(pid) - before)
            with open(out_file) as f:
                daemon.cli("free", f.read().strip())
            floors.append(spawn_ms([CLIENT, "data", "info", small], daemon.env))
        size = os.path.getsize(path)
    cost = statistics.median(opens) - statistics.median(floors)
    return [value_row("arrow: `torch data open` of a %.2f GiB Arrow IPC file (memory-mapped), ms" % (size / 2**30),
                      statistics.median(opens), "ms", "`torch data info` of a small dataset (the floor)",
                      statistics.median(floors), target="open - floor < %g ms" % OPEN_GOAL_MS,
                      met=cost < OPEN_GOAL_MS, noise=spread(floors),
                      note="open - floor %.1f ms; daemon RSS growth median %.1f MiB (max %.1f MiB) for %.0f MiB" % (
                          cost, statistics.median(growth) / 2**20, max(growth) / 2**20, size / 2**20))]


def run(quick=False):
    return throughput_rows(quick) + arrow_row(quick) + [rss_row(quick)]


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print("%-110s %12.2f %-6s ref %12.2f  ratio %.3f  %s %s" % (
            r["name"], r["value"], r["unit"], r["ref_value"] or 0, r["ratio"] or 0, r.get("target") or "",
            r.get("note", "")))
