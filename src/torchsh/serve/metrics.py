"""What a served model did: requests, errors, rejected (429), batches and their sizes, latency percentiles.

Counted by the batch loop and the edge (serve/batcher.py, edge.py) under one small lock; the latencies of the
last WINDOW requests give p50 and p99 (enqueue to reply made, milliseconds). A snapshot is one row of the serve
job (`torch job logs`) and its progress in `torch job list`.
"""
import collections
import threading
import time

WINDOW = 4096
COLUMNS = ("seconds", "requests", "errors", "rejected", "batches", "mean_batch", "max_batch", "p50_ms", "p99_ms")


class Metrics:
    def __init__(self):
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.requests = self.errors = self.rejected = self.batches = self.batched = self.max_batch = 0
        self.latencies = collections.deque(maxlen=WINDOW)

    def refused_one(self):
        """A request refused before it was queued (bad input)."""
        with self.lock:
            self.requests += 1
            self.errors += 1

    def rejected_one(self):
        with self.lock:
            self.rejected += 1

    def batch(self, size):
        with self.lock:
            self.batches += 1
            self.batched += size
            self.max_batch = max(self.max_batch, size)

    def answered(self, seconds, failed=False):
        with self.lock:
            self.requests += 1
            self.errors += failed
            self.latencies.append(seconds)

    def row(self):
        """The snapshot as a row of the job (the COLUMNS)."""
        with self.lock:
            latencies = sorted(self.latencies)
            return {"seconds": round(time.monotonic() - self.started, 3), "requests": self.requests,
                    "errors": self.errors, "rejected": self.rejected, "batches": self.batches,
                    "mean_batch": round(self.batched / self.batches, 3) if self.batches else 0.0,
                    "max_batch": self.max_batch, "p50_ms": percentile(latencies, 50),
                    "p99_ms": percentile(latencies, 99)}

    def text(self):
        """`torch job list`'s progress: the counts that change."""
        r = self.row()
        return "%d req  %d batches (mean %.1f)  p99 %s ms" % (r["requests"], r["batches"], r["mean_batch"], r["p99_ms"])


def percentile(ordered, q):
    """The q-th percentile (nearest rank) of sorted seconds, in milliseconds; None without any."""
    if not ordered:
        return None
    rank = max(1, -(-q * len(ordered) // 100))
    return round(ordered[rank - 1] * 1000, 3)
