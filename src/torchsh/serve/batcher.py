"""A served model: its request queue, filled by the HTTP edge (serve/edge.py), and the batch loop that runs as
the serve job's work (jobs/job.py, started beside the other jobs).

The loop's step is one batch: it waits, without the tensor lock, for a request; collects up to max_batch
within max_wait_ms of the first one's arrival; then, on the tensor thread (App.tensor_thread.run_soon: in turn
with the requests, and between a running fit's steps), under the tensor lock, concatenates the inputs along
dim 0, preprocesses them as the model's card says (contract/encode.py: raw rows standardized with the training
statistics, as `predict` does), runs the model in eval mode under torch.inference_mode (its mode put back after;
with --threads, on that many intra-op threads), and splits the outputs; a classifier's card adds the output
`prediction`, each row's class by name, decided as `predict` decides it (contract/decode.py). The replies are answered back on the loop's thread, so
the tensor thread never writes to a client.
An idle server sleeps on a condition (woken by a request, a stop, or once a second for the follower's lease).
"""
import collections
import contextlib
import logging
import threading
import time

import torch

from torchsh import protocol, warned
from torchsh.contract import card as cards, decode, encode
from torchsh.errors import TorchshError, from_torch_exception
from torchsh.serve import v2
from torchsh.serve.metrics import Metrics

log = logging.getLogger("torchd")
IDLE_WAKE_S = 1.0     # an idle loop looks at its job's lease this often (a foreground serve's follower)
ROW_EVERY_S = 10.0    # a metrics row in the job's output at most this often, while requests come
DTYPES = {"BOOL": torch.bool, "UINT8": torch.uint8, "INT8": torch.int8, "INT16": torch.int16,
          "INT32": torch.int32, "INT64": torch.int64, "FP16": torch.float16, "FP32": torch.float32,
          "FP64": torch.float64}
DATATYPES = {dtype: name for name, dtype in DTYPES.items()}


class Pending:
    """One request in the queue: what it asks, and how its reply goes back (deliver(status, body, headers))."""
    __slots__ = ("request", "deliver", "arrived")

    def __init__(self, request, deliver):
        self.request, self.deliver, self.arrived = request, deliver, time.monotonic()


class Served:
    protocol = "v2"  # its routes (serve/repository.py)

    def __init__(self, app, name, model, shapes, max_batch, max_wait_ms, max_queue, max_elements, threads=None):
        self.app, self.name, self.model, self.threads = app, name, model, threads
        self.shapes = shapes  # serve/shapes.py's Shapes: the metadata's shapes, and the check of requests
        self.max_batch, self.max_wait_s, self.max_queue = max_batch, max_wait_ms / 1000.0, max_queue
        self.max_elements = max_elements
        self.metrics = Metrics()
        self.queue = collections.deque()
        self.cond = threading.Condition()
        self.open = True      # takes requests; False once stopping (then 503)
        self.catch = None     # the job's warnings.Catch while its work runs

    # -- the edge's side ----------------------------------------------------------------------
    def offer(self, pending):
        """Queue a request, or refuse it at once: 429 past max_queue, 503 once stopping."""
        with self.cond:
            check_room(self)
            self.queue.append(pending)
            self.cond.notify()

    def classifies(self):
        """Whether answers carry the `prediction` output: the model's card says it is a classifier."""
        task = decode.task_of(cards.of_model(self.model)) if cards.of_model(self.model).get("task") else None
        return task is not None and task.classifies

    def wake(self):
        with self.cond:
            self.cond.notify_all()

    # -- the job's work -------------------------------------------------------------------------
    def work(self, report, should_stop):
        """The serve job: batches until stopped; then the queued requests are refused (503) and a last row says it all."""
        last_row = time.monotonic()
        # each new kind of warning a batch raises reaches the follower once, as fit's do (torchsh/warned.py)
        self.catch = warned.Catch(lambda line: report({"event": "note", "text": "warning: %s" % line}))
        try:
            while (batch := self._next_batch(should_stop)) is not None:
                self.metrics.batch(len(batch))
                for pending, answer in zip(batch, self._on_tensor_thread(batch)):
                    self._answer(pending, *answer)
                if time.monotonic() - last_row >= ROW_EVERY_S:  # only after a batch: an idle server says nothing
                    last_row = time.monotonic()
                    report(dict(self.metrics.row(), event="row"))
        finally:
            self.close()
            report(dict(self.metrics.row(), event="row"))

    def _next_batch(self, should_stop):
        """Up to max_batch requests, within max_wait_s of the first one's arrival; None when stopping."""
        with self.cond:
            while True:
                if should_stop():  # asked between any two batches, so a loaded server stops as promptly
                    return None
                if self.queue:
                    break
                self.cond.wait(IDLE_WAKE_S)
            deadline = self.queue[0].arrived + self.max_wait_s
            while len(self.queue) < self.max_batch and (left := deadline - time.monotonic()) > 0:
                if should_stop():  # what waits is refused (503) by close()
                    return None
                self.cond.wait(left)
            return [self.queue.popleft() for _ in range(min(self.max_batch, len(self.queue)))]

    def _on_tensor_thread(self, batch):
        """[(status, body, headers)] a request, the batch run on the tensor thread (in-process: here)."""
        tensor_thread = getattr(self.app, "tensor_thread", None)
        if tensor_thread is None:
            return self._infer_guarded(batch)
        done, out = threading.Event(), []
        tensor_thread.run_soon(lambda: (out.append(self._infer_guarded(batch)), done.set()))
        done.wait()
        return out[0]

    def _infer_guarded(self, batch):
        """_infer, whose every failure is an answer: the loop waiting for it must never be left waiting."""
        try:
            return self._infer(batch)
        except Exception as e:  # what a custom model raises (or a bug): its requests say so, the server lives on
            log.exception("serve %s: a batch of %d", self.name, len(batch))
            err = TorchshError("torch_error", "model %s raised %s: %s" % (self.name, type(e).__name__, e))
            return [failure(err)] * len(batch)

    def _infer(self, batch):
        """Under the tensor lock: each group of requests whose inputs fit together runs as one batch."""
        answers = {}
        groups = collections.defaultdict(list)
        for i, pending in enumerate(batch):
            groups[pending.request.signature()].append(i)
        with self.app.tensor_lock("serve %s" % self.name), self.catch or contextlib.nullcontext():
            for members in groups.values():
                for i, answer in zip(members, self._run_group([batch[i].request for i in members])):
                    answers[i] = answer
        return [answers[i] for i in range(len(batch))]

    def _run_group(self, requests):
        try:
            outputs = self._forward(requests)
        except TorchshError as e:
            return [failure(e)] * len(requests)
        except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError, MemoryError) as e:
            return [failure(from_torch_exception(e))] * len(requests)
        outputs, predicted = outputs
        answers, start = [], 0
        for request in requests:
            rows = request.inputs[0].rows()
            tensors = [o[start:start + rows] for o in outputs]
            named = [(v2.output_name(i), tuple(t.shape), DATATYPES[t.dtype], raw_bytes(t)
                      if request.binary_output(v2.output_name(i)) else t.reshape(-1).tolist())
                     for i, t in enumerate(tensors)]
            if predicted is not None:
                classes = predicted[start:start + rows]
                named.append((v2.PREDICTION, (rows,), "BYTES", v2.bytes_raw(classes)
                              if request.binary_output(v2.PREDICTION) else classes))
            start += rows
            try:
                answers.append((200, v2.infer_response(self.name, request, named), None))
            except TorchshError as e:
                answers.append(failure(e))
        return answers

    def _forward(self, requests):
        """The model on the group's inputs, concatenated along dim 0 and preprocessed by its card: (its output
        tensors, on the CPU; each row's class name, or None when the card says it is no classifier)."""
        device = next((p.device for p in self.model.parameters()), torch.device("cpu"))
        card = cards.of_model(self.model)
        inputs = [stacked([r.inputs[k] for r in requests]).to(device) for k in range(len(requests[0].inputs))]
        inputs = encode.batch(card, inputs)
        put_back = evaluating(self.model)
        threads = torch.get_num_threads()
        if self.threads:  # --threads: this model's intra-op threads, the tensor thread's own put back after
            torch.set_num_threads(self.threads)
        try:
            with torch.inference_mode():
                out = self.model(*inputs)
        finally:
            if self.threads:
                torch.set_num_threads(threads)
            put_back()
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        rows = inputs[0].shape[0]
        if not outs or not all(isinstance(o, torch.Tensor) and o.dim() > 0 and o.shape[0] == rows for o in outs):
            raise TorchshError("torch_error", "model %s returned %s, not tensors of one row an input row"
                               % (self.name, type(out).__name__), "serve a model whose outputs keep the batch dimension")
        outs = [o.detach().cpu().float() if o.dtype not in DATATYPES else o.detach().cpu() for o in outs]
        return outs, _predicted(card, outs[0])

    def _answer(self, pending, status, body, headers):
        self.metrics.answered(time.monotonic() - pending.arrived, failed=status != 200)
        pending.deliver(status, body, headers)

    def close(self):
        """Stopping: take nothing new, refuse what is queued (503). (Its name is the serve verb's to give back:
        app.served, serve/repository.py.)"""
        with self.cond:
            self.open = False
            queued, self.queue = list(self.queue), collections.deque()
        for pending in queued:
            self._answer(pending, *failure(TorchshError("not_serving", "model %s stopped serving" % self.name)))


def check_room(served):
    """A served model's refusal of one more request: not_serving once stopping, queue_full (429) with max_queue
    requests waiting (serve/lmserved.py's too)."""
    if not served.open:
        raise TorchshError("not_serving", "model %s is stopping" % served.name)
    if len(served.queue) >= served.max_queue:
        served.metrics.rejected_one()
        raise TorchshError("queue_full", "model %s has %d requests queued (--max_queue %d)"
                           % (served.name, len(served.queue), served.max_queue), "retry after a second")


def evaluating(model):
    """Put MODEL in eval mode for a batch; -> the function that puts its modes back (a fit may train it between
    batches). eval() and train() walk every module through nn.Module.__setattr__ (~40 µs a batch for a small
    CNN, as much as its forward on one sample): modules with nn.Module's own train() just have their flag
    flipped, those that were training; a model with a train() of its own gets eval() and train() called."""
    training = [m for m in model.modules() if m.training]
    if not all(type(m).train is torch.nn.Module.train for m in training):
        was_training = model.training
        model.eval()
        return lambda: model.train(was_training)
    for m in training:
        m.__dict__["training"] = False  # what Module.train(False) sets on each, without its walk

    def put_back():
        for m in training:
            m.__dict__["training"] = True
    return put_back


def _predicted(card, output):
    """Each row's class name, decided by the card's task (None: no task that classifies)."""
    task = decode.task_of(card) if card.get("task") else None
    if task is None or not task.classifies:
        return None
    return decode.decided(task, decode.class_names(card, task, output), output)


def stacked(inputs):
    """One input of several requests as one tensor: their flat values joined, shaped (rows, *row_shape)."""
    first = inputs[0]
    values = first.values[:]  # a copy the tensor owns (frombuffer shares the memory)
    for more in inputs[1:]:
        values += more.values
    dtype = DTYPES[first.datatype]
    read_as = {"FP16": torch.float32, "BOOL": torch.uint8}.get(first.datatype, dtype)  # v2.TYPECODES' reading
    flat = torch.frombuffer(values, dtype=read_as) if len(values) else torch.empty(0, dtype=read_as)
    return flat.to(dtype).reshape((sum(i.rows() for i in inputs),) + first.shape[1:])


def raw_bytes(tensor):
    """A tensor's values as the binary extension sends them: row-major, little-endian."""
    values = tensor.contiguous().numpy()
    return values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes()


def failure(err):
    """An error's reply: V2's {"error": …} with its HTTP status (429: Retry-After)."""
    headers = {"Retry-After": "1"} if err.code == "queue_full" else None
    return protocol.http_status(err.code), v2.error_body(err), headers

