"""One rank of `fit --nproc_per_node N`: rank_main(folder) is the elastic launcher's entrypoint.

It joins the process group (gloo on CPU, nccl on CUDA, the collective timeout of --timeout), rebuilds the
model, optimizer, scheduler and loaders from the spec's recipes and values, wraps the model (DDP, or FSDP's
fully_shard with --strategy fsdp), and runs fit's own loop (train/fit.py) with a RankWorld: every rank
trains on its DistributedSampler share; rank 0 alone writes --log and the checkpoints; each node's local
rank 0 reports progress and writes the finished state back into its spec folder (handoff.py names the
files).
"""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist

from torchsh import orphans
from torchsh.contract import card as cards
from torchsh.errors import TorchshError, from_torch_exception
from torchsh.train import fitcard
from torchsh.train.distributed import handoff
from torchsh.train.distributed.world import RankWorld
from torchsh.train.fit import run_fit
from torchsh.train.loss.functions import loss_function, on_device
from torchsh.train.plan import FitPlan
from torchsh.vocab import DTYPES


def rank_main(folder):
    """The entrypoint of every rank (module level, the spec folder's path its only argument)."""
    rank = int(os.environ["RANK"])
    try:
        spec, tensors = handoff.read(folder)
        # the daemon's end or its launcher's (this rank's parent, the launcher's forkserver, ends with it)
        orphans.end_with(spec["daemon_pid"], lambda: os._exit(1), parent=os.getppid())
        _run(folder, spec, tensors)
    except BaseException as e:
        _record_failure(folder, rank, e)
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _run(folder, spec, tensors):
    fit, launch = spec["fit"], spec["launch"]
    device = _device(spec)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            timeout=datetime.timedelta(seconds=launch["timeout"]))
    world = RankWorld(folder, launch["strategy"], device, spec["start"])
    objects = world.build(spec, tensors)
    torch.set_rng_state(tensors["rng.cpu"])
    plan = FitPlan(model=objects["model"], optimizer=objects["optimizer"], loader=objects["loader"],
                   loss=loss_function(fit["loss"]), loss_args=on_device(fit["loss_args"], device), epochs=fit["epochs"],
                   val=objects.get("val"), metrics=tuple(fit["metrics"]), sched=objects.get("sched"),
                   clip=fit["clip"], accum=fit["accum"], autocast=fit["autocast"], patience=fit["patience"],
                   monitor=fit["monitor"], log=fit["log"], log_format=tuple(fit["log_format"]), resume=None,
                   save_every=fit["save_every"], max_steps=fit["max_steps"], command=tuple(fit["command"]),
                   loss_name=fit["loss"],
                   target_dtype=DTYPES[fit["target_dtype"]] if fit["target_dtype"] else None,
                   **fitcard.plan_fields(cards.of_model(objects["model"]), objects.get("val"), fit["target_shape"]))
    events = open(handoff.path(folder, "events.jsonl"), "a") if world.speaks else None
    stop_file = handoff.path(folder, "stop")

    def report(event):
        if events is not None:  # local rank 0 speaks for the run; its daemon's job tails the file
            events.write(json.dumps(event, allow_nan=True) + "\n")
            events.flush()

    try:
        run_fit(None, plan, report, lambda: world.speaks and os.path.exists(stop_file), world)
    finally:
        if events is not None:
            events.close()


def _device(spec):
    """cuda:LOCAL_RANK when the daemon's model is on CUDA, else the CPU."""
    placement = spec["objects"]["model"].get("placement", {})
    if any(device.startswith("cuda") for _, device in placement.values()):
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def _record_failure(folder, rank, exc):
    """rank-R.json: the failure as one torchsh error (code, message, hint), for the daemon's one line."""
    if isinstance(exc, TorchshError):
        err = exc
    elif isinstance(exc, (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError, MemoryError)):
        err = from_torch_exception(exc)
    elif isinstance(exc, KeyboardInterrupt):
        err = TorchshError("rank_failed", "interrupted")
    else:
        err = TorchshError("rank_failed", "%s: %s" % (type(exc).__name__, str(exc).split("\n")[0]))
    try:
        handoff.write_json(handoff.path(folder, "rank-%d.json" % rank),
                             {"rank": rank, "time": time.time(), "code": err.code, "message": err.message,
                              "hint": err.hint})
    except OSError:
        pass  # the folder is gone: the daemon has given up on the run already
