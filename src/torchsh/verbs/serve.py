"""`torch serve MODEL --name NAME [--port P [--host H]] [--input_shape S] [--max_batch 32 --max_wait_ms 5] [--detach]`:
MODEL served over HTTP with the KServe V2 inference protocol, dynamically batched, as a job (docs/serve.md);
`torch serve LM --openai --name NAME`: a language model with OpenAI's routes (serve/openai_edge.py), its
requests generated together (serve/lmserved.py).

The routes answer on the daemon's own Unix socket, and with --port on a TCP port that wants the daemon's
token, TLS beyond loopback: a door of the daemon's server loop (serve/tcp.py). The job (jobs/job.py, beside the
others) is the batch loop (serve/batcher.py); `torch job list|logs|stop` manage it; its rows are the metrics
(requests, batches, p50/p99 latency). --input_shape gives the metadata its shapes (serve/shapes.py).
"""
import re

from torchsh import jobs
from torchsh.contract import card as cards
from torchsh.errors import bad_argument
from torchsh.jobs import follow
from torchsh.lm.model import LanguageModel
from torchsh.serve import batcher, shapes
from torchsh.serve.lmserved import ServedLM
from torchsh.serve.servejob import ServeJob
from torchsh.serve.tcp import PortDoor, token_path
from torchsh.verbs import verb
from torchsh.verbs.lm import TINY

_NAME = re.compile(r"[\w.-]{1,64}")
MAX_ELEMENTS = 1 << 24  # numbers in one request's inputs (64 MiB of FP32)
MAX_WAIT_MS = 60000     # a batch's first request waits at most a minute for others


@verb("serve(Module model, *, str name, int? port=None, str host=\"127.0.0.1\", int max_batch=32, "
      "float max_wait_ms=5, int max_queue=256, int? threads=None, int[]? input_shape=None, bool openai=False, "
      "bool detach=False, bool json=False) -> Json",
      "serve(LanguageModel model, *, str name, bool openai=False, int? port=None, str host=\"127.0.0.1\", "
      "int max_batch=32, float max_wait_ms=5, int max_queue=256, int? threads=None, bool detach=False, "
      "bool json=False) -> Json",
      category="nn", replies=("follow",),
      examples=("m=$(torch nn linear 4 2); j=$(torch serve $m --name lin --detach); torch job stop $j",
                TINY + "j=$(torch serve $(torch lm open tiny) --openai --name tiny --detach); torch job stop $j"))
def serve(ctx, model, name, port=None, host="127.0.0.1", max_batch=32, max_wait_ms=5.0, max_queue=256,
          threads=None, input_shape=None, openai=False, detach=False, json=False):
    """Serve MODEL as NAME over HTTP (KServe V2: POST /v2/models/NAME/infer, JSON or binary tensors), batching
    the requests that arrive together; runs as a job until `torch job stop` (or Ctrl-C without --detach).

    Args:
        name: the model's name in the V2 routes (letters, digits, _ . -); one model a name
        port: also serve on this TCP port of --host (0 to 65535; 0: any free one); requests there need the header
            Authorization: Bearer $(cat TOKEN_FILE), the file named on stderr (the daemon's, 0600)
        host: --port's address; beyond loopback (0.0.0.0, the machine's own) the port speaks only TLS, with
            the daemon's certificate (its path and fingerprint on stderr)
        max_batch: requests run together as one batch at most
        max_wait_ms: how long the first request of a batch waits for others to join it (0 to 60000)
        max_queue: requests waiting at most; one more is answered 429 with Retry-After
        threads: PyTorch's intra-op threads for the model's batches (default: the daemon's); 1 often serves a
            small model faster: splitting one small batch over the cores costs more than it saves
        openai: serve a language model (an lm:// of `torch lm open`) with OpenAI's routes instead: GET /v1/models,
            POST /v1/chat/completions, /v1/completions (streamed as Server-Sent Events with "stream": true) and
            /v1/embeddings, the body's "model" being --name; requests that arrive together generate together
        input_shape: one sample's shape, without the batch dimension (e.g. [1,28,28]): the V2 metadata then gives
            the input's and outputs' shapes (the model run once on zeros to find them), and a request of other
            rows is refused (400) before it queues
        detach: run as a job and print its job:// at once (`torch job logs|stop`, docs/jobs.md)
        json: the metrics rows as JSON lines
    """
    _check(name, port, max_batch, max_wait_ms, max_queue, threads)
    served = _served(ctx, model, name, openai, max_batch, max_wait_ms, max_queue, threads, input_shape)
    ctx.app.served.add(served)  # the V2 routes answer for it from now on (serve/repository.py)
    try:
        listener = PortDoor(ctx.app, host, port) if port is not None else None
    except BaseException:
        served.close()
        ctx.app.served.remove(served)
        raise
    route = ("POST /v1/chat/completions (\"model\": \"%s\")" % name) if openai else "POST /v2/models/%s/infer" % name
    notes = ["serving %s: %s on the daemon's socket %s" % (name, route, ctx.app.socket_path)]
    if listener is not None:
        notes.append("and on %s (header Authorization: Bearer $(cat %s))" % (listener.url(), token_path(
            ctx.app.socket_path)))
        certificate = listener.certificate()  # beyond loopback: (path, fingerprint) of what the port shows
        if certificate is not None:
            crt, fingerprint = certificate
            notes.append("TLS with the daemon's certificate %s (%s): e.g. curl --cacert %s --resolve torchd:%d:HOST "
                         "https://torchd:%d/v2/health/ready" % (crt, fingerprint, crt, listener.port, listener.port))
    job = jobs.start(ctx, "serve", lambda report, should_stop: _serve(ctx.app, served, listener, report, should_stop),
                     notes=notes, beside=True, job=ServeJob(served))
    if detach:
        ctx.said.extend(notes)  # where it serves and the token's file: the caller has nothing else to read them in
        return job.handle
    return follow.reply(ctx, job, "run", as_json=json)


def _served(ctx, model, name, openai, max_batch, max_wait_ms, max_queue, threads, input_shape):
    """The served model: a language model OpenAI-style (--openai), any other module over KServe V2."""
    if isinstance(model, LanguageModel) != bool(openai):
        raise bad_argument("--openai serves a language model (an lm:// of `torch lm open`), and a language model "
                           "is served with --openai", "torch serve $(torch lm open FOLDER) --openai --name NAME")
    if openai:
        if input_shape is not None:
            raise bad_argument("--input_shape is for a model served over V2, not --openai")
        return ServedLM(ctx.app, name, model, max_batch, max_wait_ms, max_queue, threads)
    inputs = cards.of_model(model).get("inputs") or []
    if input_shape is None and len(inputs) == 1:  # the model's card knows one row's shape (docs/models.md)
        input_shape = inputs[0].get("shape") or None
    declared = shapes.declared(model, input_shape, ctx.app.memory)
    return batcher.Served(ctx.app, name, model, declared, max_batch, max_wait_ms, max_queue, MAX_ELEMENTS, threads)


def _check(name, port, max_batch, max_wait_ms, max_queue, threads):
    """bad_argument for a flag out of its range, before anything is served."""
    if not _NAME.fullmatch(name):
        raise bad_argument("--name %r: letters, digits, _ . - (at most 64)" % name, "e.g. --name mnist")
    if max_batch < 1 or max_queue < 1:
        raise bad_argument("--max_batch and --max_queue must be at least 1")
    if not 0 <= max_wait_ms <= MAX_WAIT_MS:  # NaN too: a batch must end
        raise bad_argument("--max_wait_ms %g: from 0 to %d (a batch's first request waits that long for others)"
                           % (max_wait_ms, MAX_WAIT_MS), "e.g. --max_wait_ms 5")
    if port is not None and not 0 <= port <= 65535:
        raise bad_argument("--port %d: a TCP port is from 0 to 65535" % port, "--port 0 takes any free one")
    if threads is not None and not 1 <= threads <= 1024:
        raise bad_argument("--threads must be from 1 to 1024")


def _serve(app, served, listener, report, should_stop):
    try:
        served.work(report, should_stop)  # it ends refusing what is queued
    finally:
        app.served.remove(served)  # its name is free again
        if listener is not None:
            listener.close()
