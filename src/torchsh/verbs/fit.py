"""`torch fit MODEL OPT LOADER --loss L [--epochs N] [--val LOADER] [--metrics accuracy] …`: the whole
training loop as a job in the daemon (src/torchsh/train/fit.py has the loop, step for step PyTorch's recipe),
followed by its caller (a follow reply, docs/jobs.md) or, with --detach, left to run (its job:// printed).

stdout: one row per epoch (epoch, train loss, val loss, metrics, lr, seconds) as aligned text, or one
JSON object a line with --json. --log DIR keeps metrics.jsonl/.csv, run.json and the checkpoints
last/best; --resume auto continues from DIR's last checkpoint bit for bit, even mid-epoch.
--nproc_per_node N trains on torch.distributed instead (train/distributed/; docs/distributed.md).
"""
import functools
import json
import os

from torchsh import jobs, memory
from torchsh.contract import card as cards
from torchsh.errors import TorchshError, bad_argument
from torchsh.history import fitloop, jobrun
from torchsh.jobs import follow
from torchsh.train import fitcard
from torchsh.train.compiled import cache as compilecache
from torchsh.train.distributed import supervisor as distributed
from torchsh.train.fit import run_fit
from torchsh.train.logs import rundir
from torchsh.train.loss.functions import loss_function, loss_options as _loss_options
from torchsh.train.plan import LOG_FORMATS, SAVE_EVERY, FitPlan
from torchsh.verbs import verb
from torchsh.vocab import dtype_name

_COLUMNS = ("epoch", "loss", "val_loss")
_PLAN_OPTIONS = ("epochs", "val", "sched", "clip", "accum", "autocast", "patience", "monitor", "save_every", "max_steps")
_LAUNCH_OPTIONS = ("nnodes", "node_rank", "rdzv", "strategy", "timeout", "trusted_network")


@verb("fit(Module model, Optimizer optimizer, Loader loader, *, str? loss=None, Json? loss_args=None, "
      "int epochs=1, Loader? val=None, str[]? metrics=None, Scheduler? sched=None, float? clip=None, int accum=1, "
      "str? autocast=None, int? patience=None, str? monitor=None, InOutDirPath? log=None, str[]? log_format=None, "
      "str? resume=None, bool overwrite=False, bool version=False, ScalarType? target_dtype=None, "
      "int save_every=%d, int? max_steps=None, int? nproc_per_node=None, int nnodes=1, int node_rank=0, "
      "str? rdzv=None, str strategy=\"ddp\", float timeout=%g, bool trusted_network=False, bool detach=False, "
      "bool json=False, bool compile=False) -> Json"
      % (SAVE_EVERY, distributed.TIMEOUT_S),
      category="optim", writes=("model", "optimizer", "loader", "loss_args", "val", "sched"),
      form=fitloop.form, no_form=fitloop.UNWRITTEN, replies=("follow",),
      examples=("m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
                "L=$(torch data loader $(torch data tensors $(torch randn 64 2) $(torch randn 64 1)) "
                "--batch_size 16 --shuffle --seed 0); torch fit $m $o $L --loss mse_loss --epochs 2",
                "m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
                "L=$(torch data loader $(torch data tensors $(torch randn 64 2) $(torch randn 64 1)) "
                "--batch_size 8 --shuffle --seed 0); torch fit $m $o $L --loss mse_loss --epochs 2 --nproc_per_node 2"))
def fit(ctx, model, optimizer, loader, loss=None, loss_args=None, epochs=1, val=None, metrics=None, sched=None,
        clip=None, accum=1, autocast=None, patience=None, monitor=None, log=None, log_format=None, resume=None,
        overwrite=False, version=False, target_dtype=None, save_every=SAVE_EVERY, max_steps=None,
        nproc_per_node=None, nnodes=1, node_rank=0, rdzv=None, strategy="ddp", timeout=distributed.TIMEOUT_S,
        trusted_network=False, detach=False, json=False, compile=False):
    """Train MODEL with OPT over LOADER's batches for --epochs; prints one row per epoch.

    Args:
        loss: a torch.nn.functional loss (mse_loss, cross_entropy, …); each batch is (inputs…, target).
            Without it: cross_entropy for integer class targets and a Linear head of k > 1 outputs, mse_loss
            for float targets shaped as a Linear head's output (named on stderr); otherwise refused
        target_dtype: the targets' dtype for the loss (int64 for cross_entropy's class indices), y.to(dtype)
        loss_args: the loss's options as JSON, e.g. '{"label_smoothing": 0.1}'
        epochs: the run's total epochs (a resumed run finishes the same total)
        val: a loader evaluated after every epoch (eval mode, no grad): val_loss and val_ metrics
        metrics: accuracy (argmax == target), top5, precision, recall, f1 (macro), f1_micro, confusion (a matrix: in --json rows and metrics.jsonl), mae, rmse, r2; with --loss lm: perplexity (exp of the NLL per token) and tokens (with tokens_per_s): each over the whole epoch
        sched: a scheduler stepped once per epoch (ReduceLROnPlateau: on val_loss, else loss)
        clip: clip_grad_norm_ of all parameters before each optimizer step (after unscaling with fp16)
        accum: batches per optimizer step; each batch's loss / accum, as PyTorch's recipe
        autocast: bf16 or fp16: torch.autocast on the model's device (fp16 adds a GradScaler)
        patience: stop after this many epochs without improvement of --monitor
        monitor: the value early stopping and the `best` checkpoint watch (default val_loss, or loss without --val)
        log: a folder for metrics.jsonl, metrics.csv, run.json, last.safetensors, best.safetensors; one that
            holds a run already is refused (run_exists) unless --resume or --overwrite. run.json and the
            checkpoints keep the data's classes and statistics (`torch predict` uses them); and TensorBoard's
            event files (scalars step/NAME and epoch/NAME, run.json as text, the HParams tab's hyperparameters)
        log_format: which logs --log writes: jsonl, csv, tb (TensorBoard's events), comma-separated; all by default
        resume: auto (the --log folder's last checkpoint, when there is one) or a checkpoint file
        overwrite: replace the run in --log DIR (its files stay until the new run has a checkpoint)
        version: log to a new DIR/version_N (N = 1 + the highest there, version_0 first), named on stderr
        save_every: optimizer steps between `last` checkpoints (also saved every epoch and where a run stops)
        max_steps: stop after this many optimizer steps of the whole run (resumable with --resume)
        nproc_per_node: train in N processes on torch.distributed (DDP; gloo on CPU, nccl on CUDA), each on a
            DistributedSampler share of LOADER's data in batches of its batch size; the handles get the result
        nnodes: nodes of the run (one daemon per host, each runs this fit; docs/distributed.md)
        node_rank: this node's rank, 0..nnodes-1 (node 0 hosts the rendezvous at --rdzv)
        rdzv: HOST:PORT of node 0's rendezvous (several nodes)
        strategy: ddp (DistributedDataParallel) or fsdp (FSDP's fully_shard: parameters and state sharded)
        timeout: seconds a collective waits for the other ranks before the run fails
        trusted_network: allow --rdzv beyond loopback: torch.distributed's traffic there has no TLS and no token
        detach: run as a job and print its job:// at once (`torch job logs|wait|stop`, docs/jobs.md)
        json: rows as JSON lines
        compile: run each step's forward+loss and optimizer step through torch.compile (needs a C++ compiler;
            not bit-exact: run.json says so, docs/training.md#compile has the drift measured)
    """
    return _start(ctx, locals())


def _start(ctx, o):
    """Check everything, choose the log folder, then start the run as a job (followed, or --detach)."""
    notes = []  # lines the caller's stderr gets first (the job's "note" events)
    _check_log_flags(ctx, o)
    o["loss"], item, output_shape = fitcard.choose_loss(o["model"], o["loader"].dataset, o["loss"],
                                                        o["target_dtype"], notes)
    card, contract = fitcard.prepare(o["model"], o["loader"], o["val"], o["loss"], item, output_shape, o["target_dtype"],
                               o["metrics"] or (), notes)
    plan = FitPlan(model=o["model"], optimizer=o["optimizer"], loader=o["loader"], loss=loss_function(o["loss"]),
                   loss_args=_loss_options(o["loss_args"], o["loss"], o["model"], ctx.registry),
                   metrics=tuple(o["metrics"] or ()), log=o["log"],
                   log_format=tuple(o["log_format"] or LOG_FORMATS), resume=_resume_path(ctx, o["resume"]),
                   loss_name=o["loss"], command=_command(o), target_dtype=o["target_dtype"],
                   compile_cache=_compile_cache(ctx, o), **contract,
                   **{key: o[key] for key in _PLAN_OPTIONS})
    work = _work(ctx, plan, o["nproc_per_node"], tuple(o[key] for key in _LAUNCH_OPTIONS))
    ctx.noted = {"target_shape": plan.target_shape, "loss_args": plan.loss_args,  # `history --python` writes the same
                 "val_standardization": cards.standardization(card) if plan.val_encode is not None else None}
    if o["nproc_per_node"] is None:  # the ranks' memory is their own processes'
        memory.admit_first_step(ctx, plan.optimizer, backward=True)
    if o["version"]:  # the last check passed: a refused fit leaves no empty version folder behind
        plan.log = rundir.new_version(plan.log)
        notes.append("logging to %s" % os.path.join(_shown(ctx, o["log"]), os.path.basename(plan.log)))
    cards.attach(plan.model, fitcard.with_loss_args(card, plan.loss_args))  # every check passed: run.json,
    # checkpoints, predict, evaluate and serve read it
    if o["overwrite"] and rundir.run_files(plan.log):
        work = functools.partial(_replacing, plan.log, work)
    columns = [c for c in _COLUMNS if c != "val_loss" or plan.val is not None]
    columns += list(plan.metrics) + ["tokens_per_s"] * ("tokens" in plan.metrics)
    columns += ["val_" + m for m in plan.metrics if plan.val is not None] + ["lr", "seconds"]
    files = _callers_files(ctx, o["detach"])
    uses = (plan.model, plan.optimizer, plan.loader, plan.val, plan.sched)
    run = jobrun.JobRun()  # how the job ends: `history --python` writes the loop it ran (history/fitloop.py)
    job = jobs.start(ctx, "fit", run.wrap(work), columns, uses=uses, notes=notes)
    run.started(job)
    ctx.noted["job"] = run
    job.downloads = files  # fetched with the run's last reply (jobs/follow.py)
    return job.handle if o["detach"] else follow.reply(ctx, job, "run", as_json=o["json"])


def _check_log_flags(ctx, o):
    """--log's companions fit together, and a --log DIR holding a run is continued or replaced, never lost."""
    log, resume, overwrite, version = o["log"], o["resume"], o["overwrite"], o["version"]
    if (overwrite or version or o["log_format"]) and log is None:
        flag = "overwrite" if overwrite else "version" if version else "log_format"
        raise TorchshError("missing_argument", "--%s needs --log DIR" % flag,
                           "torch fit … --log runs/1 --overwrite, or --log runs --version")
    if overwrite and (resume is not None or version):
        raise bad_argument("--overwrite replaces the run in --log DIR; it goes with neither --resume nor --version",
                           "continue it with --resume auto, or keep it and log to another folder")
    if version and resume == "auto":
        raise bad_argument("--version starts a new run in DIR/version_N: there is nothing there to --resume auto",
                           "continue a run with --log DIR/version_N --resume auto")
    if log is not None and resume is None and not overwrite and not version:
        rundir.refuse_a_run_there(log, _shown(ctx, log))
    if log is not None and resume == "auto":
        rundir.refuse_a_run_without_checkpoint(log, _shown(ctx, log))


def _compile_cache(ctx, o):
    """--compile: the daemon's compile folder, set up, and the compiler found; refused where it cannot run."""
    if not o["compile"]:
        return None
    if o["nproc_per_node"] is not None:
        raise TorchshError("not_supported", "--compile does not go with --nproc_per_node (its ranks run eagerly)",
                           "drop one of them")
    folder = compilecache.folder_for(ctx.app.socket_path)
    compilecache.prepare(folder)
    return folder


def _replacing(folder, work, report, should_stop):
    """--overwrite's work: the old run moved aside, put back when the new one ends before its first checkpoint."""
    replacing = rundir.Replacing(folder)
    try:
        return work(report, should_stop)
    finally:
        replacing.settle()


def _shown(ctx, folder):
    """A --log folder as the caller names it: on a remote context, the caller's path, not its staged copy."""
    return ctx.downloads[0][1] if ctx.downloads else folder


def _work(ctx, plan, nproc_per_node, launch_options):
    """The run as work(report, should_stop): one process, or N on torch.distributed."""
    if nproc_per_node is not None:
        return functools.partial(distributed.run, ctx, plan, distributed.Launch(nproc_per_node, *launch_options))
    if launch_options != (1, 0, None, "ddp", distributed.TIMEOUT_S, False):
        raise TorchshError("missing_argument", "--nnodes, --node_rank, --rdzv, --strategy, --timeout and "
                           "--trusted_network belong to a distributed fit", "add --nproc_per_node N")
    return functools.partial(run_fit, ctx, plan)


def _callers_files(ctx, detach):
    """On a remote context: the caller's --log folder, which the run writes after this command returns, so
    it is fetched with the followed run's last reply; a detached run's cannot be."""
    if detach and ctx.downloads:
        raise TorchshError("remote_path", "--log %s: a detached run's folder cannot be brought back here"
                           % ctx.downloads[0][1], "write --log %s:/absolute/path (a folder on its host), or run "
                           "without --detach" % ctx.context_name)
    ctx.uploads.clear()  # the run reads --resume FILE after this returns: its staged copy stays (daemon's life)
    files, ctx.downloads = ctx.downloads, []
    return files


def _resume_path(ctx, resume):
    if resume is None or resume == "auto":
        return resume
    return ctx.path(resume)  # the caller's cwd; on a remote context only NAME:/path


def _command(args):
    """The command line as run.json records it: handles stand for the objects run.json describes."""
    words = ["torch", "fit", "MODEL", "OPT", "LOADER"]
    for key in ("loss", "loss_args", "epochs", "metrics", "clip", "accum", "autocast", "patience", "monitor",
                "log", "log_format", "resume", "save_every", "max_steps", "nproc_per_node"):
        value = args[key]
        if value is not None:
            words += ["--" + key, ",".join(value) if isinstance(value, list) else
                      json.dumps(value, separators=(",", ":")) if isinstance(value, dict) else str(value)]
    if args["target_dtype"] is not None:
        words += ["--target_dtype", dtype_name(args["target_dtype"])]
    words += [w for key, word in (("val", "VAL_LOADER"), ("sched", "SCHED")) if args[key] is not None
              for w in ("--" + key, word)]
    return tuple(words + ["--" + key for key in ("overwrite", "version", "compile") if args[key]])
