"""The daemon's state: registry, op table, the one tensor lock, and the lifecycle clock.

The tensor lock serializes every piece of tensor work (PyTorch state such as the RNG and grad
mode is process-wide); status and the census read the registry under its own lock, so they answer
while a long op runs.
"""
import contextlib
import os
import threading
import time

import torch

from torchsh import __version__, protocol
from torchsh.registry import Registry
from torchsh.table import build_table


class App:
    def __init__(self, socket_path, ttl_seconds=3600.0):
        self.version = __version__
        self.socket_path = socket_path
        self.log_path = protocol.sibling(socket_path, ".log")
        self.registry = Registry()
        self.table, self.table_seconds = build_table()
        self.ttl = ttl_seconds
        self.started = time.time()
        self._last_activity = time.monotonic()
        self._lock = threading.Lock()
        self.busy_since = None
        self.busy_op = None
        self.stop_event = threading.Event()
        self.restart_requested = False
        self.fastpath = None  # daemon.fastpath.FastPath when `torch init bash` enabled it

    @contextlib.contextmanager
    def tensor_lock(self, op=None):
        with self._lock:
            self.busy_since, self.busy_op = time.monotonic(), op
            try:
                yield
            finally:
                self.busy_since = self.busy_op = None
                self.touch()

    def touch(self):
        self._last_activity = time.monotonic()

    def idle_seconds(self):
        return 0.0 if self.busy_since else time.monotonic() - self._last_activity

    def remaining_seconds(self):
        return None if self.ttl is None else max(0.0, self.ttl - self.idle_seconds())

    def expired(self):
        return self.ttl is not None and self.busy_since is None and self.idle_seconds() >= self.ttl

    def request_stop(self, restart=False):
        self.restart_requested = restart
        self.stop_event.set()

    def devices(self):
        out = ["cpu"]
        if torch.cuda.is_available():
            out += ["cuda:%d" % i for i in range(torch.cuda.device_count())]
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            out.append("mps")
        return out

    def pid(self):
        return os.getpid()
