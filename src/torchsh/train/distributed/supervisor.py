"""`torch fit … --nproc_per_node N`: the daemon's side of a fit on torch.distributed.

run(ctx, plan, launch, report, should_stop) has run_fit's shape, so a distributed fit is a job like any
fit (progress, rows, --detach, `job stop`, Ctrl-C). It writes the run's spec into a private folder
(handoff.py: recipes and values, JSON + safetensors), starts the launcher process (launch.py:
torch.distributed's elastic launcher) and, while the ranks train, relays rank 0's progress events, passes
a stop on as the folder's `stop` file (the ranks stop together at the next optimizer step, resumably),
and answers the requests queued for the tensor thread (should_stop does, as between one-process steps).
At the end it loads rank 0's finished state into the SAME model, optimizer and scheduler objects (their
handles are unchanged), or raises the first failed rank's error as one line.
"""
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Optional

from torchsh import paths
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import statefile as state_file, stfile
from torchsh.memory import heap
from torchsh.models import checkpoint
from torchsh.remote import listener
from torchsh.train import resume
from torchsh.train.distributed import handoff, netns, shares
from torchsh.train.record import FitResult
from torchsh.vocab import dtype_name

log = logging.getLogger("torchd")
POLL_S = 0.1          # how often the daemon relays events and looks for a stop
STOP_GRACE_S = 30.0   # after a stop request: the ranks' next step may take this long past --timeout
TIMEOUT_S = 60.0      # --timeout's default: a collective that waits longer ends the run
MULTI_NODE_RDZV_S = 600.0  # how long a node waits for the others to join (at least --timeout)


@dataclass
class Launch:
    """The launch options of `fit --nproc_per_node N` (torchrun's names)."""
    nproc_per_node: int
    nnodes: int = 1
    node_rank: int = 0
    rdzv: Optional[str] = None     # HOST:PORT of node_rank 0's rendezvous store (several nodes)
    strategy: str = "ddp"          # ddp | fsdp
    timeout: float = TIMEOUT_S     # seconds a collective waits (gloo/nccl timeout) before the run fails
    trusted_network: bool = False  # the user vouches for --rdzv's network: torch.distributed has no TLS, no token

    def __post_init__(self):
        if self.nproc_per_node < 1 or self.nnodes < 1:
            raise bad_argument("--nproc_per_node and --nnodes must be at least 1")
        if not 0 <= self.node_rank < self.nnodes:
            raise bad_argument("--node_rank must be in 0..%d (--nnodes %d)" % (self.nnodes - 1, self.nnodes))
        if self.nnodes > 1 and not self.rdzv:
            raise TorchshError("missing_argument", "--nnodes %d needs --rdzv HOST:PORT" % self.nnodes,
                               "the address of node_rank 0, where the rendezvous store listens")
        if self.rdzv and not _host_port(self.rdzv):
            raise bad_argument("--rdzv takes HOST:PORT, not %r" % self.rdzv, "e.g. --rdzv 10.0.0.1:29500")
        if self.rdzv and not self.trusted_network and not listener.is_loopback(self.rdzv.rpartition(":")[0]):
            raise TorchshError("untrusted_network", "--rdzv %s: torch.distributed's store and gloo/nccl would "
                               "listen there with no TLS and no token (anyone who reaches them joins the run)"
                               % self.rdzv, "on a private network you trust, add --trusted_network "
                               "(docs/distributed.md, Security)")
        if self.strategy not in ("ddp", "fsdp"):
            raise bad_argument("--strategy takes ddp or fsdp, not %r" % self.strategy)
        if not self.timeout > 0:
            raise bad_argument("--timeout must be a positive number of seconds")

    def record(self):
        rdzv_timeout = self.timeout if self.nnodes == 1 else max(self.timeout, MULTI_NODE_RDZV_S)
        return {"nproc_per_node": self.nproc_per_node, "nnodes": self.nnodes, "node_rank": self.node_rank,
                "rdzv": self.rdzv, "strategy": self.strategy, "timeout": self.timeout,
                "rdzv_timeout": int(rdzv_timeout)}


def _host_port(text):
    host, _, port = text.rpartition(":")
    return bool(host) and port.isdigit() and 0 < int(port) < 65536


def run(ctx, plan, launch, report, should_stop):
    folder = tempfile.mkdtemp(prefix="torchsh-fit-")  # 0700: the run's state is the user's alone
    proc = None
    try:
        start = _start(plan)
        objects = {"model": plan.model, "optimizer": plan.optimizer, "sched": plan.sched, "loader": plan.loader,
                   "val": plan.val}
        handoff.write(folder, objects, _fit_options(plan), launch.record(), start)
        proc = _launch(folder, launch, isolate=ctx.env.get(netns.ENV_OFF) != "0")
        _follow(proc, folder, report, should_stop, launch)
        return _finish(folder, plan, proc)
    finally:
        _end(proc)
        shutil.rmtree(folder, ignore_errors=True)


def _fit_options(plan):
    return {"loss": plan.loss_name, "loss_args": plan.loss_args, "epochs": plan.epochs, "metrics": list(plan.metrics),
            "clip": plan.clip, "accum": plan.accum, "autocast": plan.autocast, "patience": plan.patience,
            "monitor": plan.monitor, "log": plan.log, "log_format": list(plan.log_format),
            "save_every": plan.save_every, "max_steps": plan.max_steps, "command": list(plan.command),
            "target_dtype": dtype_name(plan.target_dtype) if plan.target_dtype is not None else None,
            "target_shape": list(plan.target_shape) if plan.target_shape is not None else None}


def _start(plan):
    """Where the ranks start. --resume: the checkpoint's model, optimizer, scheduler and RNG go into the
    daemon's objects first (as a one-process fit loads them), its progress and loader positions to the ranks."""
    source = resume.source(plan)
    if source is None:
        return {"loader_epoch": plan.loader.epoch, "resumed": None, "resumed_from": None}
    tensors, meta = stfile.read(source)
    if not isinstance(meta, dict) or "fit" not in meta:
        raise TorchshError("state_mismatch", "%s is not a checkpoint of `torch fit`" % source,
                           "resume from a fit log folder's last.safetensors")
    fit = state_file.decode(meta["fit"], tensors)
    if (fit.get("loader") or {}).get("format") != shares.STATE_FORMAT:
        raise TorchshError("state_mismatch", "%s was saved by a one-process fit" % source,
                           "resume it without --nproc_per_node, or start the distributed run afresh")
    checkpoint.restore(source, plan.model, plan.optimizer, plan.sched, rng=True)
    return {"loader_epoch": plan.loader.epoch, "resumed": fit, "resumed_from": source}


def _launch(folder, launch, isolate=True):
    env = dict(os.environ, TORCHSH_FIT_RUN=folder)  # marks the launcher and its ranks (`ps e`, the tests)
    env.update(heap.child_environ(env))  # the ranks keep freed memory as the daemon does (memory/heap.py)
    env.setdefault("LOGLEVEL", "INFO")  # elastic's account of the launch in launcher.log (the daemon log gets its tail)
    if not launch.rdzv or listener.is_loopback(launch.rdzv.rpartition(":")[0]):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # the ranks' gloo and nccl sockets listen on loopback only
        env.setdefault("NCCL_SOCKET_IFNAME", "lo")
    if "OMP_NUM_THREADS" not in env:  # the ranks share the cores (torchrun sets 1; this keeps all in use)
        env["OMP_NUM_THREADS"] = str(max(1, len(os.sched_getaffinity(0)) // launch.nproc_per_node))
    prefix = netns.isolating_argv(env) if isolate and not launch.rdzv else []  # one node: its own loopback
    with open(handoff.path(folder, "launcher.log"), "wb") as out:
        return subprocess.Popen(prefix + paths.python_m("torchsh.train.distributed.launch", folder),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _follow(proc, folder, report, should_stop, launch):
    """Relay rank 0's events until the launcher ends; pass a stop on; end the launcher if the ranks
    do not stop in time."""
    events, stop_asked = _Events(handoff.path(folder, "events.jsonl")), None
    while True:
        ended = proc.poll() is not None
        events.relay(report)
        if ended:
            return
        stop = should_stop()  # in a job this also answers the requests queued for the tensor thread
        if stop and stop_asked is None:
            open(handoff.path(folder, "stop"), "w").close()
            stop_asked = time.monotonic()
        if stop_asked is not None and time.monotonic() - stop_asked > launch.timeout + STOP_GRACE_S:
            log.warning("fit: the ranks did not stop within %.0f s; ending them", launch.timeout + STOP_GRACE_S)
            _end(proc)
        try:
            proc.wait(POLL_S)
        except subprocess.TimeoutExpired:
            pass


class _Events:
    """events.jsonl read as it grows: whole lines only (a line being written waits for the next read)."""

    def __init__(self, path):
        self.path, self.offset = path, 0

    def relay(self, report):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        whole = data[:data.rfind(b"\n") + 1]
        self.offset += len(whole)
        for line in whole.splitlines():
            report(json.loads(line))


def _finish(folder, plan, proc):
    failure = handoff.path(folder, "failure.json")
    result = handoff.path(folder, "result.json")
    if proc.returncode != 0 or not os.path.exists(result):
        _log_tail(folder)
        if os.path.exists(failure):
            rec = handoff.read_json(failure)
            where = "rank %d: " % rec["rank"] if rec.get("rank") is not None else ""
            raise TorchshError(rec["code"], where + rec["message"], rec.get("hint"))
        raise TorchshError("rank_failed", "the launcher ended with status %s" % proc.returncode,
                           "the daemon log has its output")
    checkpoint.restore(handoff.path(folder, "result.safetensors"), plan.model, plan.optimizer, plan.sched, rng=True)
    done = handoff.read_json(result)
    if not plan.loader.in_epoch:  # the epoch count goes on as after a one-process fit
        plan.loader.epoch = done["loader_epoch"]
    return FitResult(rows=done["rows"], epoch=done["epoch"], step=done["step"], reason=done["reason"])


def _log_tail(folder, lines=40):
    try:
        with open(handoff.path(folder, "launcher.log"), errors="replace") as f:
            tail = f.read().splitlines()[-lines:]
    except OSError:
        return
    log.warning("fit --nproc_per_node: the launcher's last lines:\n%s", "\n".join(tail))


def _end(proc):
    """End the launcher if it still runs: SIGTERM (elastic ends its ranks), SIGKILL when it lingers."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
