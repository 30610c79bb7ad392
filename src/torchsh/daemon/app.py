"""The daemon's state: registry, op table, the one tensor lock, and the lifecycle clock; the objects its
features keep (served models: app.served, running jobs: app.jobs); the hooks it hands the rooms below it
(app.hooks: a job's step boundary, a state-changing request), so that they know nothing of who listens.

The tensor lock serializes every piece of tensor work (PyTorch state such as the RNG and grad
mode is process-wide); status and the census read the registry under its own lock, so they answer
while a long op runs. The lock is FIFO-fair (a plain Lock lets a late request overtake ones that
waited longer), and a request whose client left while it waited is dropped on acquiring it.
"""
import collections
import os
import threading
import time
from dataclasses import dataclass

import torch

from torchsh import __version__, memory, paths
from torchsh.daemon import fastpath
from torchsh.history.log import HistoryLog
from torchsh.jobs.running import RunningJobs
from torchsh.profile import recording
from torchsh.registry.made import RecordingRegistry
from torchsh.remote.staging import Staging
from torchsh.serve.repository import ModelRepository
from torchsh.table import build_table
from torchsh.train.compiled import cache as compilecache


class App:
    def __init__(self, socket_path, ttl_seconds=3600.0):
        self.version = __version__
        self.socket_path = socket_path
        self.log_path = paths.sibling(socket_path, ".log")
        self.registry = RecordingRegistry()  # lists what each request makes: freed if its client never hears
        self.jobs = RunningJobs()  # jobs/running.py: jobs.start adds to it (through the request's ctx)
        self.registry.in_use = self.jobs.in_use  # a scope that ends keeps what a running job trains
        self.served = ModelRepository()  # `torch serve`'s models by name, which the V2 routes answer for
        self.history = HistoryLog()  # the requests that changed state: `torch history` (torchsh.history)
        self.hooks = Hooks(step=recording.at_step, request=self.history.watch)
        self.staging = Staging()  # the callers' files, when this daemon is a remote context's (remote/staging.py)
        compilecache.warm_in_background(compilecache.folder_for(socket_path))  # where `--compile` ran before
        self.table, self.table_seconds = build_table()
        self.ttl = ttl_seconds
        self.started = time.time()
        self._last_activity = time.monotonic()
        self._lock = FairLock()
        self.busy_since = None
        self.busy_op = None
        self.stop_event = threading.Event()
        self.restart_requested = False
        self.fastpath = None  # daemon.fastpath.FastPath when `torch init bash` enabled it
        self.memory = memory.Budget.from_env()  # TORCHSH_MAX_MEMORY (torchd --max-memory sets it)
        self.io_stats = None  # set by daemon.server: callable -> {"connections", "connection_limit", "queued", ...}
        # set by daemon.server: the tensor thread's run_task(fn), waiting(), serve_waiting() (daemon/workers.py),
        # for jobs to run there; None in-process (a job then runs on a thread of its own)
        self.tensor_thread = None
        self.doors = None  # set by daemon.server: its doors (wire/doors.Doors), opened and closed from any thread
        self.request_state = threading.local()  # .client_gone: callable set by the server around each request

    def tensor_lock(self, op=None):
        """`with app.tensor_lock(op):` the tensor work of one request, in arrival order (FairLock);
        Cancelled when its client left while it waited."""
        return _TensorLockHeld(self, op)

    def enable_fastpath(self):
        """Turn the loopback fast path on (once; later calls are no-ops); returns the FastPath.
        Callers (the /v1/cli route, `torch init bash`, torchd's start) go through the App they hold."""
        return fastpath.enable(self)

    def lock_waiters(self):
        return self._lock.waiting()

    def touch(self):
        self._last_activity = time.monotonic()

    def idle_seconds(self):
        return 0.0 if self.busy_since else time.monotonic() - self._last_activity

    def remaining_seconds(self):
        return None if self.ttl is None else max(0.0, self.ttl - self.idle_seconds())

    def expired(self):
        """Idle for its TTL, and no job running: an idle `torch serve` holds no lock, yet keeps its daemon."""
        return (self.ttl is not None and self.busy_since is None and self.idle_seconds() >= self.ttl
                and not self.jobs.any_running())

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


@dataclass(frozen=True)
class Hooks:
    """What the rooms below the daemon call at their moments, handed in by App (KServe hands its model
    repository in the same way): step() at each job step boundary, on the tensor thread (jobs/steplock.py;
    `torch profile --steps` counts there: profile/recording.py); request(op, values) before a state-changing
    op runs, under the tensor lock (call/invoke.py) -> its watch, whose done() logs it, or None (the history
    log: history/log.py)."""
    step: object
    request: object


class Cancelled(BaseException):
    """The client left while its request waited for the tensor lock: nothing ran, nobody to answer.
    A BaseException, like asyncio.CancelledError, so the handlers' `except Exception` nets that turn
    failures into replies let it through to the server, which logs it and closes the connection."""


class _TensorLockHeld:
    """App.tensor_lock's context: a class, not a generator (a @contextmanager costs microseconds per op)."""
    __slots__ = ("app", "op")

    def __init__(self, app, op):
        self.app, self.op = app, op

    def __enter__(self):
        app = self.app
        if app._lock.acquire():  # it waited: is the request still wanted?
            gone = getattr(app.request_state, "client_gone", None)
            if gone is not None and gone():
                app._lock.release()
                raise Cancelled(self.op)
        app.busy_since, app.busy_op = time.monotonic(), self.op

    def __exit__(self, kind, value, tb):
        app = self.app
        app.busy_since = app.busy_op = None
        app.touch()
        app._lock.release()


class FairLock:
    """A lock granted in arrival order: release hands it straight to the longest waiter."""

    def __init__(self):
        self._mutex = threading.Lock()
        self._waiters = collections.deque()
        self._held = False

    def acquire(self):
        """Returns True when it had to wait (the caller may check its request is still wanted)."""
        self._mutex.acquire()
        if not self._held:
            self._held = True
            self._mutex.release()
            return False
        turn = threading.Lock()
        turn.acquire()
        self._waiters.append(turn)
        self._mutex.release()
        turn.acquire()  # released by the holder before us; _held stays True through the hand-over
        return True

    def release(self):
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._held = False

    def waiting(self):
        return len(self._waiters)

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()
