"""A language model served OpenAI-style (`torch serve LM --openai`): its request queue, filled by the routes
(serve/openai_edge.py), and the loop that runs as the serve job's work, generating for every request in one
batch (lm/batchgen.py: continuous batching over one KV cache).

The loop's turn: take what is queued (when idle, wait for a first request, then up to max_wait_ms for others
to join it, as the V2 batcher does); then, on the tensor thread under the tensor lock, one step: the ended rows
leave the cache, the embeddings asked are computed, every generating row gets its next token, and new requests
are prefilled and join (at most max_batch rows). Back on the loop's thread, each row's tokens become text,
are cut at its stop strings, and are written to its client (serve/lmrows.py). So other tensor work takes its
turn between any two steps, and the tensor thread never writes to a client.
"""
import collections
import logging
import threading
import time

import torch

from torchsh.errors import TorchshError, from_torch_exception
from torchsh.lm import batchgen, generation
from torchsh.serve import batcher
from torchsh.serve.batcher import IDLE_WAKE_S, ROW_EVERY_S
from torchsh.serve.lmrows import Row
from torchsh.serve.metrics import Metrics

log = logging.getLogger("torchd")
_TORCH_FAILURES = (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError, MemoryError)


class ServedLM:
    protocol = "openai"

    def __init__(self, app, name, lm, max_batch, max_wait_ms, max_queue, threads=None):
        self.app, self.name, self.model, self.lm, self.threads = app, name, lm, lm, threads
        self.max_batch, self.max_wait_s, self.max_queue = max_batch, max_wait_ms / 1000.0, max_queue
        self.metrics = Metrics()
        self.queue = collections.deque()
        self.cond = threading.Condition()
        self.open = True
        self.created = int(time.time())

    # -- the routes' side -----------------------------------------------------------------------
    def offer(self, pending):
        """Queue a Row (generation) or an Embedding, or refuse it at once: 429 past max_queue, 503 once stopping."""
        with self.cond:
            self.check_room()
            self.queue.append(pending)
            self.cond.notify()

    def check_room(self):
        """not_serving once stopping; queue_full (429) with max_queue requests waiting."""
        batcher.check_room(self)

    def wake(self):
        with self.cond:
            self.cond.notify_all()

    # -- the job's work -------------------------------------------------------------------------------
    def work(self, report, should_stop):
        batch, last_row = batchgen.Batch(self.lm), time.monotonic()
        try:
            while (arrived := self._arrivals(batch, should_stop)) is not None:
                self._turn(batch, arrived)
                if time.monotonic() - last_row >= ROW_EVERY_S:
                    last_row = time.monotonic()
                    report(dict(self.metrics.row(), event="row"))
        finally:
            self.close(batch)
            report(dict(self.metrics.row(), event="row"))

    def _arrivals(self, batch, should_stop):
        """What joins at this turn (a list, maybe empty while rows generate); None when stopping."""
        with self.cond:
            while not (live := [r for r in batch.rows if not r.ended]):
                if should_stop():
                    return None
                if self.queue:
                    deadline = self.queue[0].arrived + self.max_wait_s
                    while len(self.queue) < self.max_batch and (left := deadline - time.monotonic()) > 0:
                        if should_stop():
                            return None
                        self.cond.wait(left)
                    break
                self.cond.wait(IDLE_WAKE_S)
            if should_stop():
                return None
            room = self.max_batch - len(live) if batch.joinable() or not live else 0
            taken, kept = [], collections.deque()
            while self.queue:
                pending = self.queue.popleft()
                if isinstance(pending, Row) and room <= 0:
                    kept.append(pending)
                else:
                    room -= isinstance(pending, Row)
                    taken.append(pending)
            self.queue = kept
            return taken

    def _turn(self, batch, arrived):
        """One step on the tensor thread, then each row's tokens handed on here; ended rows leave next turn."""
        joining = [p for p in arrived if isinstance(p, Row) and not p.gone()]
        embeds = [p for p in arrived if not isinstance(p, Row)]
        if joining:
            self.metrics.batch(len(joining))
        stepped, first = self._on_tensor_thread(lambda: self._threaded(batch, joining, embeds))
        for row, token in zip(batch.rows, stepped + first):
            if row.take(token):
                self.metrics.answered(time.monotonic() - row.arrived, failed=row.failed)
        for embed in embeds:
            self.metrics.answered(time.monotonic() - embed.arrived, failed=embed.deliver_result())

    def _threaded(self, batch, joining, embeds):
        """_step on --threads intra-op threads (the tensor thread's own put back after)."""
        if not self.threads:
            return self._step(batch, joining, embeds)
        threads = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self._step(batch, joining, embeds)
        finally:
            torch.set_num_threads(threads)

    def _step(self, batch, joining, embeds):
        """On the tensor thread, under the tensor lock: -> (the running rows' next tokens, the new rows' first)."""
        with self.app.tensor_lock("serve %s" % self.name), torch.inference_mode():
            batch.keep([i for i, row in enumerate(batch.rows) if not row.ended])
            for embed in embeds:
                embed.run(self.lm, getattr(self.app, "memory", None))
            stepped = self._guarded(batch, batch.rows, batch.step) if batch.rows else []
            if not joining:
                return stepped, []
            try:
                generation.admit(self.lm, getattr(self.app, "memory", None), len(batch.rows) + len(joining),
                                 max(len(r.ask.prompt) for r in joining + batch.rows),
                                 max(r.ask.max_tokens for r in joining + batch.rows))
            except TorchshError as e:
                for row in joining:
                    row.fail(e)
                return stepped, []
            before = len(batch.rows)
            first = self._guarded(batch, joining, lambda: batch.add(joining))
            if len(batch.rows) == before:  # the prefill failed: the new rows are not in the batch
                return stepped, []
            return stepped, first

    def _guarded(self, batch, rows, run):
        """run()'s tokens; a failure ends ROWS (and, since the cache may be half made, the whole batch) with it."""
        try:
            return run()
        except TorchshError as e:
            err = e
        except _TORCH_FAILURES as e:
            err = from_torch_exception(e)
        except Exception as e:  # a bug, or what a custom model raises: its requests say so, the server lives on
            log.exception("serve %s: a step of %d rows", self.name, len(batch.rows))
            err = TorchshError("torch_error", "model %s raised %s: %s" % (self.name, type(e).__name__, e))
        for row in set(batch.rows) | set(rows):
            row.fail(err)
        batch.keep([])
        return []

    def _on_tensor_thread(self, fn):
        tensor_thread = getattr(self.app, "tensor_thread", None)
        if tensor_thread is None:
            return fn()
        done, out = threading.Event(), []

        def run():
            try:
                out.append(fn())
            except BaseException as e:  # never leave the loop waiting
                log.exception("serve %s: a step", self.name)
                out.append(e)
            done.set()
        tensor_thread.run_soon(run)
        done.wait()
        if isinstance(out[0], BaseException):
            raise TorchshError("torch_error", "model %s: %s" % (self.name, out[0]))
        return out[0]

    def close(self, batch=None):
        """Stopping: take nothing new; refuse what is queued and end what generates (503)."""
        with self.cond:
            self.open = False
            queued, self.queue = list(self.queue), collections.deque()
        stopped = TorchshError("not_serving", "model %s stopped serving" % self.name)
        for pending in queued + (batch.rows if batch is not None else []):
            pending.fail(stopped)
