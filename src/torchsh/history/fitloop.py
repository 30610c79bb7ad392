"""`torch fit` in the script: its loop (train/fit.py's docstring), written so the weights come out bit for bit.

Each epoch's batches go through zero_grad, the loss, backward, (clip,) step; then the --val batches in eval
mode without grad; then the scheduler's step. `--max_steps N` ends the run right after its Nth optimizer
step, mid-epoch included, before that epoch's validation and scheduler step, as train/fit.py's _step does.
`--patience P` watches the epoch's mean loss (or the --val loss), each batch's loss.item() weighted by its
target's rows and summed in Python floats as train/metrics/epoch.py's EpochSums does, and stops after P epochs
without improvement. `--resume` is written when its checkpoint held what the daemon held, or the note kept
the checkpoint (resumed.py: its restore lines come first): the loop goes on from the checkpoint's epoch and
step. A fit is a job, followed or --detach, and its entry is logged as the job starts: the loop is written as the
job ended (jobrun.py): done, the whole loop; stopped (`job stop`, Ctrl-C, its follower gone), cut right after
the optimizer step it stopped at, before that epoch's validation and scheduler step, as --max_steps cuts it
(train/fit.py polls the stop after each step, and ends there); a job still running, failed, or whose end is
unknown is refused naming it. What it cannot write yet gives None: the refusal says UNWRITTEN, fit's row's
no_form (verbs/fit.py).
"""

# fit's options that this loop does not write: they change what a run does beyond its epochs of steps
_UNWRITTEN = {"accum": 1, "autocast": None, "nproc_per_node": None, "compile": False}
UNWRITTEN = ("its loop is written with --loss given, without --%s or a ReduceLROnPlateau --sched, "
             "--patience only watching loss or val_loss, and --resume only without --patience, from a "
             "checkpoint without CUDA generator or GradScaler states, once its job has ended (done or "
             "stopped)" % ", --".join(_UNWRITTEN))
from torchsh.errors import TorchshError
from torchsh.history import jobrun, resumed
from torchsh.train.loss import lm as lm_loss

_ROWS = "_rows = _y.shape[0] if _y.dim() else 1  # EpochSums weighs a batch's loss by its rows"


def _writable(e):
    a = e.args
    if a.get("loss") is None or isinstance(a.get("loss_args"), str) or e.made.get("plateau") or \
            (a.get("loss") == "lm" and a.get("loss_args")):
        return False
    if a.get("patience") is not None and a.get("monitor") not in (None, "loss", "val_loss"):
        return False
    if a.get("resume") is not None and not _resumes_in_place(e):
        return False
    return all(a.get(k, v) == v for k, v in _UNWRITTEN.items())


def _resumes_in_place(e):
    """A fresh run (no checkpoint yet), one whose checkpoint changes nothing, or one whose checkpoint the note
    kept (resumed.py); not with --patience, whose best value and epoch sums the checkpoint carries."""
    noted = e.made.get("resume") or {}
    return noted.get("fresh") or ((noted.get("in_place") or "checkpoint" in noted) and e.args.get("patience") is None)


def _start(e):
    """(the first epoch, the optimizer steps taken) where the run begins: a resumed one where its checkpoint is."""
    progress = (e.made.get("resume") or {}).get("progress")
    return (progress["epoch"], progress["step"]) if progress else (1, 0)


def _loss(e, r):
    """The loss of a batch (_x, _y): the model's output, the target as --target_dtype and viewed as the output
    where fit reconciled them (train/loss/check.py), --loss_args as fit used them (tensors: train/loss/functions.py)."""
    a, made = e.args, e.made
    given = made["loss_args"] if "loss_args" in made else a.get("loss_args")
    options = "".join(", %s=%s" % (r.name(k), r.lit(v)) for k, v in (given or {}).items())
    to = ".to(%s)" % r.lit(a["target_dtype"]) if a.get("target_dtype") is not None else ""
    shape = made.get("target_shape")
    view = ".view(len(_y), %s)" % ", ".join(str(int(n)) for n in shape) if shape is not None else ""
    if a["loss"] == "lm" and not options:  # a causal LM's next-token loss (train/loss/lm.py), written out
        return lm_loss.SCRIPT.format(logits="%s(*_x)" % r.lit(a["model"]), labels="_y" + to + view)
    return "torch.nn.functional.%s(%s(*_x), _y%s%s%s)" % (r.name(a["loss"]), r.lit(a["model"]), to, view, options)


def _standardize(e, r):
    """--val's raw rows standardized as the training rows were (contract/encode.batch: in float64, rounded once
    to the field's dtype): the lines, inside the val loop, or none where fit did not."""
    stats = e.made.get("val_standardization")
    if not stats:
        return []
    field = "_x[%d]" % int(stats["field"])
    return ["_v = %s  # --val's raw rows, standardized as the model was trained" % field,
            "%s = ((_v.to(torch.float64) - torch.tensor(%s, dtype=torch.float64)) / torch.tensor(%s, dtype=torch."
            "float64)).to(_v.dtype if _v.is_floating_point() else torch.float32)" % (field, r.lit(stats["mean"]),
                                                                                    r.lit(stats["std"]))]


def _train_lines(e, r, counted, cut):
    """One epoch's optimizer steps (inside the epoch loop), up to the cut (limit, why) when there is one."""
    a = e.args
    m, o = r.lit(a["model"]), r.lit(a["optimizer"])
    clip = ["torch.nn.utils.clip_grad_norm_([p for g in %s.param_groups for p in g['params']], %s)" % (o, r.lit(a["clip"]))] \
        if a.get("clip") is not None else []
    limit, why = cut
    body = ["%s.zero_grad()" % o, "_batch = %s.next()" % r.lit(a["loader"]), "if _batch is None:", "    break",
            "*_x, _y = _batch", "_loss = " + _loss(e, r)]
    if counted:
        body += [_ROWS, "_sum, _n = _sum + _loss.item() * _rows, _n + _rows"]
    body += ["_loss.backward()"] + clip + ["%s.step()" % o] + (["_step += 1"] if limit is not None else [])
    lines = ["%s.train()" % m] + (["_sum, _n = 0.0, 0"] if counted else [])
    lines += ["while True:" if limit is None else "while _step < %d:" % limit] + ["    " + line for line in body]
    if limit is not None:  # the run ends after that step, before the epoch's validation and scheduler step
        lines += ["if _step >= %d:  # %s" % (limit, why), "    break"]
    return lines


def _val_lines(e, r, counted):
    a = e.args
    m = r.lit(a["model"])
    lines = ["%s.eval()" % m, "with torch.no_grad():"]
    standardize = ["        " + line for line in _standardize(e, r)]
    if not counted:
        body = ["        *_x, _y = _batch"] + standardize + ["        %s(*_x)" % m] if standardize else \
            ["        %s(*_batch[:-1])" % m]
        return lines + ["    while (_batch := %s.next()) is not None:" % r.lit(a["val"])] + body + ["%s.train()" % m]
    return lines + ["    _sum, _n = 0.0, 0", "    while (_batch := %s.next()) is not None:" % r.lit(a["val"]),
                    "        *_x, _y = _batch"] + standardize + ["        " + _ROWS,
                                                                  "        _sum += %s.item() * _rows" % _loss(e, r),
                                                                  "        _n += _rows", "%s.train()" % m]


def _job_end(e):
    """How the fit's job ended (jobrun.py): done, stopped, or stopped before it started; refused while it runs,
    when it failed or its end is unknown, naming the job."""
    end = jobrun.end_of(e.made.get("job")) or {"state": jobrun.UNKNOWN, "handle": None}
    job, state = end["handle"] or "its job", end["state"]
    if state == jobrun.RUNNING:
        raise TorchshError("not_portable", "cannot write fit as PyTorch yet: %s is still running, and where it "
                           "ends decides its loop" % job, "torch job wait %s, then ask again (or torch job stop "
                           "%s: the loop is cut where it stopped)" % (job, job))
    if state in (jobrun.FAILED, jobrun.UNKNOWN):
        raise TorchshError("not_portable", "cannot write fit as PyTorch: %s %s, so what its loop did is not known"
                           % (job, "failed" if state == jobrun.FAILED else "ended unseen by this history "
                              "(a session saved while it ran, or a log from before jobs were noted)"),
                           "`torch history --for HANDLE` leaves out what the object does not depend on")
    return end


def _cut(e, end):
    """(the optimizer step the run ended after, why), or (None, None) for a run of all its epochs: where its job
    stopped, or --max_steps."""
    limit = e.args.get("max_steps")
    if end["state"] == jobrun.STOPPED and (limit is None or end["step"] < limit):
        return end["step"], "%s stopped at epoch %d step %d (job stop, Ctrl-C or its follower gone)" % (
            end["handle"], end["epoch"], end["step"])
    return limit, None if limit is None else "--max_steps %d" % limit


def form(e, r):
    """The fit's lines, or None when it has options this loop does not write."""
    if not _writable(e):
        return None
    end = _job_end(e)
    if end["state"] == jobrun.NEVER_STARTED:
        return ["# torch fit: %s was stopped before it started: nothing of its loop ran" % end["handle"]]
    cut = _cut(e, end)
    a = e.args
    (first, taken), limit = _start(e), cut[0]
    epochs, patience, val = a.get("epochs", 1) - first + 1, a.get("patience"), a.get("val")
    if epochs < 1 or (limit is not None and taken >= limit):
        return ["# torch fit --resume: nothing to do, the run is over (epoch %d, step %d)" % (first, taken)]
    watch = None if patience is None else (a.get("monitor") or ("val_loss" if val is not None else "loss"))
    body = _train_lines(e, r, watch == "loss", cut)
    if val is not None:
        body += _val_lines(e, r, watch == "val_loss")
    if a.get("sched") is not None:
        body.append("%s.step()" % r.lit(a["sched"]))
    if patience is not None:  # train/fit.py's _improved: a lower mean loss, else one more bad epoch
        body += ["_value = _sum / _n if _n else float('nan')",
                 "if _best is None or _value < _best:", "    _best, _bad = _value, 0", "else:", "    _bad += 1",
                 "if _bad >= %d:  # --patience %d" % (patience, patience), "    break"]
    head = resumed.restore_lines(e.made["resume"], a, r) if "checkpoint" in (e.made.get("resume") or {}) else []
    head += (["_step = %d" % taken] if limit is not None else []) + (["_best, _bad = None, 0"] if patience else [])
    loop = "for _epoch in range(%d):  # torch fit --epochs %d" % (epochs, a.get("epochs", 1))
    if first > 1 or taken:
        loop += ", resumed at epoch %d step %d" % (first, taken)
    return head + [loop] + ["    " + line for line in body]
