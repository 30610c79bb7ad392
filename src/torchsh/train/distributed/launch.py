"""`python -m torchsh.train.distributed.launch FOLDER`: the launcher process of `fit --nproc_per_node N`.

The daemon starts it with subprocess (fork+exec: nothing of the threaded daemon is copied) and it runs
torch.distributed's elastic launcher, the API under torchrun (LaunchConfig + elastic_launch), with
rank.rank_main as every rank's entrypoint. Ranks start from a forkserver that has imported torch
and torchsh's rank code once (start_method "forkserver" with that preload), not by fork() of a process
with threads. Rendezvous: c10d on localhost for one node; with --rdzv HOST:PORT the static rendezvous
(torchrun's default with --master_addr/--master_port): node_rank 0 hosts the store there.

On a failing rank elastic stops the others (max_restarts 0) and raises ChildFailedError; the first
failure (its rank, and the rank-R.json the rank wrote) goes to failure.json for the daemon. A SIGTERM
(the daemon giving up on a stop) makes elastic end every rank. The launcher ends itself when the daemon
is gone.
"""
import multiprocessing
import os
import shutil
import signal
import sys
import uuid

from torchsh import orphans

PRELOAD = ["torch", "torch.distributed", "torchsh.train.distributed.rank"]


def config(launch, log_dir):
    """Elastic's launch of this node. The rendezvous is rendezvous.py's: one node's store on 127.0.0.1, several
    nodes' on node 0's --rdzv address (the run id prefixes the store's keys: the same on every node)."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.launcher.api import LaunchConfig
    from torchsh.train.distributed import rendezvous
    rdzv = launch.get("rdzv")
    endpoint, run_id = (rdzv, "torchsh-fit-" + rdzv) if rdzv else ("127.0.0.1:0", uuid.uuid4().hex)
    configs = {"rank": launch["node_rank"], "timeout": launch["rdzv_timeout"]}
    return LaunchConfig(min_nodes=launch["nnodes"], max_nodes=launch["nnodes"], nproc_per_node=launch["nproc_per_node"],
                        run_id=run_id, rdzv_backend=rendezvous.BACKEND, rdzv_endpoint=endpoint,
                        rdzv_configs=configs, max_restarts=0, monitor_interval=0.1, start_method="forkserver",
                        logs_specs=DefaultLogsSpecs(log_dir=log_dir), shutdown_timeout=5)


def main(folder):
    from torchsh.train.distributed import handoff, netns
    if netns.inside():
        netns.loopback_up()
    spec = handoff.read_json(handoff.path(folder, "spec.json"))
    orphans.end_with(spec["daemon_pid"], lambda: os.kill(os.getpid(), signal.SIGTERM))  # elastic then ends every rank
    multiprocessing.set_forkserver_preload(PRELOAD)
    try:
        return _launch(folder, spec)
    finally:
        if not orphans.alive(spec["daemon_pid"]):  # no daemon will read the folder or remove it
            shutil.rmtree(folder, ignore_errors=True)


def _launch(folder, spec):
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import elastic_launch
    from torchsh.train.distributed import rendezvous
    from torchsh.train.distributed.rank import rank_main
    rendezvous.register()
    try:
        elastic_launch(config(spec["launch"], os.path.join(folder, "logs")), rank_main)(folder)
    except ChildFailedError as e:
        rank, failure = e.get_first_failure()
        killed = failure.exitcode is not None and failure.exitcode < 0  # a signal: that rank wrote nothing
        _write_failure(folder, (not killed and _first_recorded(folder)) or _from_elastic(rank, failure))
        return 1
    except rendezvous.AddressNotHere as e:
        _write_failure(folder, {"rank": None, "code": "rank_failed", "message": str(e),
                                "hint": "--rdzv names node 0's own address and a free port"})
        return 1
    except Exception as e:  # the rendezvous or the launch itself: no rank ran
        _write_failure(folder, {"rank": None, "code": "rank_failed", "hint": None,
                                "message": "the launch failed: %s: %s" % (type(e).__name__, str(e).split("\n")[0])})
        return 1
    return 0


def _first_recorded(folder):
    """The earliest rank-R.json: the rank that failed first (the others' errors follow from its end)."""
    from torchsh.train.distributed import handoff
    records = []
    for name in os.listdir(folder):
        if name.startswith("rank-") and name.endswith(".json"):
            try:
                records.append(handoff.read_json(handoff.path(folder, name)))
            except (OSError, ValueError):
                continue
    return min(records, key=lambda r: r["time"]) if records else None


def _from_elastic(rank, failure):
    """A rank that died without a record (a signal, os._exit): elastic's words for it."""
    message = failure.message
    if isinstance(message, dict):
        message = message.get("message", "")
    if not message or "To enable traceback" in str(message):
        message = "exited with status %s" % failure.exitcode
        if failure.exitcode is not None and failure.exitcode < 0:
            message = "killed by %s" % signal.Signals(-failure.exitcode).name
    return {"rank": rank, "code": "rank_failed", "message": str(message).split("\n")[0], "hint": None}


def _write_failure(folder, record):
    from torchsh.train.distributed import handoff
    handoff.write_json(handoff.path(folder, "failure.json"), record)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
