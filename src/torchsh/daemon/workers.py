"""The daemon's worker threads: whole requests come in from the event loop (daemon/server.py), are
answered here, and their connections go back to the loop when they go quiet.

Pools, started up front (starting threads under load fails): requests that never take the tensor
lock (status, census, free, daemon stop) have their own, so they answer behind any queue of tensor
work. Tensor work runs on ONE thread, in arrival order: PyTorch's CPU kernels use OpenMP, and libgomp
keeps a pool of threads per calling thread; once the pools together outnumber the cores, every pool
stops spin-waiting between parallel regions (its "throttled" spin), which made the MLP step ~20% slower
on a worker than on the main thread (bench/training.py: 1.35x -> 1.09x the in-process loop). It ran
one at a time anyway, under the tensor lock. The route table's `dispatch` and `lockfree` are handed in
by the server, so this module knows nothing of routes.

So that the one tensor thread never waits on a client: a reply the socket does not take at once (a big
`value`, a client that stopped reading) goes to a sender thread, and a request whose client left while
it was queued is dropped unrun. A worker that answered a kept-alive request lingers LINGER_S for the
connection's next one and answers it itself (a client in a loop sends it within microseconds, and
handing every request through the loop thread would cost two thread switches per request), unless
another connection's tensor request is waiting; for the first SPIN_S it polls rather than sleeps
(waking a sleeping thread cost ~30 µs here: keep-alive `add` 79 -> 58 µs, bench/api.py). A connection's
reads and writes go through its Conn (daemon/conn.py; a TLS door's: daemon/tlsconn.py), and what a worker
reads on its own passes its door's check as the loop's would (doors.Door.lets_through).
"""
import collections
import logging
import os
import queue
import threading

from torchsh.daemon.app import Cancelled
from torchsh.wire import http
from torchsh.wire.streamed import ChunkedStream, Streamed

log = logging.getLogger("torchd")
QUICK_WORKERS, SENDERS, FOLLOWERS = 4, 4, 4  # started up front; the tensor pool is one thread (above)


class Workers:
    def __init__(self, app, dispatch, lockfree):
        self.app, self.dispatch, self.lockfree = app, dispatch, lockfree
        self.stopping = False       # set by the server once stopping: answers say Connection: close
        self.returned = queue.SimpleQueue()   # (conn, keep) handed back to the loop
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)  # the loop selects on wake_r
        self.quick = _Pool("torchd-quick", QUICK_WORKERS, self._work)
        self.tensor = _Pool("torchd-tensor", 1, self._work)
        self.senders = _Pool("torchd-send", SENDERS, self._send_rest)
        self.followers = _Pool("torchd-follow", FOLLOWERS, self._follow)  # http.Later replies, made off the workers
        self.tasks = collections.deque()  # run_task's functions, each with a (None, None) turn in the tensor queue

    def submit(self, conn, request):
        """Queue a whole request on the pool it belongs to, decided before it waits anywhere."""
        (self.quick if self.lockfree(self.app, request) else self.tensor).queue.put((conn, request))

    # -- long work on the tensor thread (jobs: App.tensor_thread is this object) -------------------
    def run_task(self, fn):
        """Run fn() on the tensor thread after the requests queued before it (one task at a time)."""
        self.tasks.append(fn)
        self.tensor.queue.put((None, None))

    def run_soon(self, fn):
        """Run fn() on the tensor thread in turn with the requests (a served model's batch): unlike a task's,
        its turn is also taken between a job's steps (serve_waiting), so it never waits a whole job out."""
        self.tensor.queue.put((None, fn))

    def waiting(self):
        """Requests queued for the tensor thread (queued tasks aside): what serve_waiting would answer."""
        return self.tensor.queue.qsize() > len(self.tasks)

    def serve_waiting(self):
        """From a task, at a safe point (a job's step boundary, the tensor lock let go): answer the
        requests queued now, here on the tensor thread, without lingering. Queued tasks wait their turn."""
        tasks = []
        for _ in range(self.tensor.queue.qsize()):
            try:
                conn, request = self.tensor.queue.get_nowait()
            except queue.Empty:
                break
            if conn is None and request is None:
                tasks.append((conn, request))
            elif conn is None:
                self._run_task(request)  # run_soon's
            else:
                self._work(conn, request, self.tensor, linger=False)
        for item in tasks:
            self.tensor.queue.put(item)

    def queued(self):
        return self.tensor.queue.qsize()

    def taken_back(self):
        """The loop, woken by wake_r: [(conn, keep)] the workers handed back since the last call."""
        while os.read(self.wake_r, 4096) == 4096:
            pass
        out = []
        while not self.returned.empty():
            out.append(self.returned.get())
        return out

    def stop(self):
        self.quick.stop()
        self.tensor.stop()
        self.senders.stop()
        self.followers.stop()

    def _work(self, conn, request, pool, linger=True):
        """Worker thread: answer, then linger for the connection's next request and answer it here
        too; hand the connection back to the loop when it goes quiet."""
        if conn is None:  # run_task's turn, or run_soon's function
            return self._run_task(self.tasks.popleft() if request is None else request)
        keep = False
        state = self.app.request_state
        state.client_gone = conn.client_gone  # asked by App.tensor_lock after a wait
        try:
            if pool is self.tensor and conn.client_gone():
                log.info("dropped %s %s (peer pid %s): its client left while it waited for the tensor lock",
                         request.method, request.path, conn.peer_pid)
            else:
                while True:
                    keep = self._answer(conn, request, pool)
                    if keep is None:
                        return  # a sender thread finishes the reply and hands the connection back
                    linger = linger and keep and (pool is self.quick or self.tensor.queue.empty())
                    request = self._next_request(conn) if linger else None
                    if request is None:
                        break
                    if pool is self.quick and not self.lockfree(self.app, request):
                        self.tensor.queue.put((conn, request))  # a quick worker never waits for the tensor lock
                        return
        except Exception:  # a bug here must not lose the connection's slot or the worker
            log.exception("worker")
            keep = False
        finally:
            state.client_gone = None
        self._hand_back(conn, keep)

    @staticmethod
    def _run_task(fn):
        try:
            fn()
        except Exception:  # a task's own failure must not take the tensor thread with it
            log.exception("tensor task %r", fn)

    def _hand_back(self, conn, keep):
        self.returned.put((conn, keep))
        self.wake()

    def wake(self):
        """Wake the loop (from any thread): a connection handed back, or a door opened or closed."""
        try:
            os.write(self.wake_w, b"x")
        except BlockingIOError:
            pass  # the pipe is full of wake-ups already

    def _answer(self, conn, request, pool):
        """Run one request and send its reply. True when the connection stays open for another; None
        when a sender thread took the rest of the reply (and the connection with it), or another worker
        took the request. A reply that cannot be delivered frees what the request made (registry/made.py)."""
        with self.app.registry.recording() as made:
            try:
                self.app.touch()
                response = self.dispatch(self.app, request)
                if isinstance(response, http.Prepare):
                    response = self._prepare(conn, request, response, pool)
                    if response is None:
                        return None
                if isinstance(response, http.Later):  # made on a follower thread, which sends it and hands back
                    self.followers.queue.put((conn, request, response))
                    return None
                if isinstance(response, http.Deferred):  # whoever answers it sends it (_deliver)
                    response.attach(lambda made_later: self._deliver(conn, request, made_later))
                    return None
                if isinstance(response, Streamed):  # written chunk by chunk as it is made; a sender hands it back
                    keep = request.keep_alive and not self.stopping and conn.door.keep_alive
                    response.attach(ChunkedStream(conn, keep, response, lambda rest, keep: self.senders.queue.put(
                        (conn, [rest] if rest else [], keep, (request, [])))))
                    return None
                if conn.door.frame is not None:  # the fast path: one request a connection (a held one stays open)
                    if conn.client_gone():  # TCP takes a first send after the peer closed: ask first
                        raise BrokenPipeError
                    return self._send(conn, conn.door.frame(response, request), conn.on_close is not None, (request, made))
                keep = request.keep_alive and not self.stopping and conn.door.keep_alive
                return self._send(conn, response.pieces(keep), keep, (request, made))
            except Cancelled:
                log.info("dropped %s %s (peer pid %s): its client left while it waited for the tensor lock",
                         request.method, request.path, conn.peer_pid)
            except OSError:  # the client left, or stopped reading for SEND_S
                self._unclaimed(conn, request, made)
            except Exception:  # MemoryError building a reply, a bug: this request fails, the daemon lives
                log.exception("worker: %s %s", request.method, request.path)
                self._unclaimed(conn, request, made)
        return False

    def _prepare(self, conn, request, prepare, pool):
        """Run a request's Prepare on this quick worker, then queue the request for the tensor thread (None), or
        -> the reply refusing it. The tensor thread never prepares: it hands such a request to a quick worker
        (one a lingering tensor worker read itself), which dispatches it again."""
        if pool is self.tensor:
            self.quick.queue.put((conn, request))
            return None
        response = prepare.run()
        if response is None:
            self.tensor.queue.put((conn, request))
        return response

    def _send(self, conn, pieces, keep, made_by):
        """Send what the socket takes now; queue the rest on a sender thread (None) rather than wait.
        made_by: (the request, what it made), freed if the rest cannot be sent."""
        for i, piece in enumerate(pieces):
            view = memoryview(piece)
            sent = conn.send_nowait(view)
            if sent < len(view):
                self.senders.queue.put((conn, [view[sent:]] + pieces[i + 1:], keep, made_by))
                return None
        return keep

    def _follow(self, conn, request, later, pool):
        """Follower thread: make a Later reply (a job followed to its end; the connection's end stops a leased
        job), send it, hand the connection back. Never on the tensor thread, which the job itself runs on."""
        keep = False
        try:
            response = later.make(conn.client_gone)
            if response is not None:
                keep = request.keep_alive and not self.stopping and conn.door.keep_alive
                pieces = conn.door.frame(response, request) if conn.door.frame else response.pieces(keep)
                keep = self._send(conn, pieces, keep, (request, []))
                if keep is None:
                    return  # a sender thread finishes it
        except OSError:
            keep = False
        except Exception:
            log.exception("follower: %s %s", request.method, request.path)
        self._hand_back(conn, keep)

    def _deliver(self, conn, request, response):
        """A Deferred reply, made: sent from the thread that made it (never blocking: the rest goes to a sender)."""
        keep = request.keep_alive and not self.stopping and conn.door.keep_alive
        try:
            keep = self._send(conn, response.pieces(keep), keep, (request, []))
        except OSError:
            keep = False
        if keep is not None:
            self._hand_back(conn, keep)

    def _send_rest(self, conn, pieces, keep, made_by, pool):
        """Sender thread: the rest of a reply, blocking (SO_SNDTIMEO = SEND_S at most), then back to the loop."""
        try:
            for piece in pieces:
                conn.send_all(piece)
        except OSError:
            keep = False  # the client left, or stopped reading for SEND_S
            self._unclaimed(conn, *made_by)
        self._hand_back(conn, keep)

    def _unclaimed(self, conn, request, made):
        """The reply never reached the client: nobody will learn what the request made, so it is freed."""
        freed = self.app.registry.free_unclaimed(made)
        if freed:
            log.info("freed %s, made by %s %s: its client (peer pid %s) left before its reply",
                     " ".join(freed), request.method, request.path, conn.peer_pid)

    def _next_request(self, conn):
        """The next request if it arrives whole within LINGER_S and passes the connection's door. Anything
        else (nothing yet, a partial, bad or refused request) goes back to the loop with the bytes."""
        try:
            if not conn.buf:
                chunk = conn.recv_linger()
                if not chunk:
                    return None  # nothing came (or EOF: the loop closes it)
                conn.buf += chunk
            parsed = http.parse_request(conn.buf, conn.door.max_body)
        except (OSError, http.HTTPError):
            return None
        if parsed is None or not conn.door.lets_through(conn.buf, parsed[0]):
            return None
        request, used = parsed
        del conn.buf[:used]
        request.peer_pid, request.peer_uid, request.hold = conn.peer_pid, conn.peer_uid, conn.hold
        return request


class _Pool:
    """Worker threads started up front: no thread is ever started while serving."""

    def __init__(self, name, size, work):
        self.queue = queue.SimpleQueue()  # FIFO: with the FIFO lock, tensor requests run in arrival order
        self.work = work
        self.threads = [threading.Thread(target=self._run, name="%s-%d" % (name, i), daemon=True)
                        for i in range(size)]
        for t in self.threads:
            t.start()

    def _run(self):
        while (item := self.queue.get()) is not None:
            self.work(*item, self)

    def stop(self):
        for _ in self.threads:
            self.queue.put(None)
