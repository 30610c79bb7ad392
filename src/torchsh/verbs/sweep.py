"""`torch sweep --model T --opt T --space S --data LOADER …`: hyperparameter search as a job. Optuna asks
for each trial's values (TPE, random or grid; median, ASHA or Hyperband pruning), a `fit` trains it, and
the study is told how it ended. src/torchsh/sweep/ has the parts: space (the --space grammar), study
(storage, sampler, pruner), setup (new, --resume, --join), trials (one trial as a fit), runner (the job).

stdout: one row per trial (trial, state, the monitored value, epochs, its values, seconds), then the best
trial on stderr. docs/experiments.md is the user's view.
"""
import os

from torchsh import jobs
from torchsh.errors import TorchshError, bad_argument
from torchsh.jobs import follow
from torchsh.sweep import runner, setup, space as spaces, study as studies
from torchsh.verbs import verb
from torchsh.vocab import DTYPES

_EXAMPLE = ("L=$(torch data loader $(torch data tensors $(torch randn 64 4) $(torch randint 3 '[64]')) "
            "--batch_size 16 --shuffle --seed 0); ")


@verb("sweep(*, Loader data, str? model=None, str? opt=None, str? space=None, Loader? val=None, int? trials=None, "
      "str? loss=None, Json? loss_args=None, int? epochs=None, str[]? metrics=None, str? monitor=None, "
      "int? patience=None, str? sampler=None, str? pruner=None, int? seed=None, ScalarType? target_dtype=None, "
      "InOutDirPath? log=None, str? storage=None, str? study=None, str? join=None, bool resume=False, "
      "int vectorize=16, bool detach=False, bool json=False) -> Json",
      category="optim", replies=("follow",),
      examples=(_EXAMPLE + "torch sweep --model \"sequential 'linear 4 {width}' relu 'linear {width} 3'\" "
                "--opt 'adam --lr {lr}' --space 'width: [8,16]; lr: loguniform(1e-3,1e-1)' --trials 4 "
                "--data $L --loss cross_entropy --epochs 2 --seed 0",))
def sweep(ctx, data, model=None, opt=None, space=None, val=None, trials=None, loss=None, loss_args=None,
          epochs=None, metrics=None, monitor=None, patience=None, sampler=None, pruner=None, seed=None,
          target_dtype=None, log=None, storage=None, study=None, join=None, resume=False, vectorize=16,
          detach=False, json=False):
    """Search hyperparameters: each trial fills --model and --opt's {names} with values Optuna draws from
    --space, trains them with fit's loop on --data for --epochs, and tells the study the best --monitor.

    Args:
        data: the training loader every trial uses (each trial starts from its state at the sweep's start)
        model: `torch nn` words with {name} placeholders: "sequential 'linear 784 {width}' relu 'linear {width} 10'",
            or a language model's LoRA adapter: "lm lora $m --r {r} --alpha 16" (one trial at a time, each taken
            out of the model when it ends; its weights stay in DIR/trial_NNNN)
        opt: `torch optim` words without the model: 'adamw --lr {lr} --weight_decay {wd}'
        space: NAME: SPEC; …: [a,b,c], uniform(lo,hi), loguniform(lo,hi), quniform(lo,hi,q), int(lo,hi[,step]),
            logint(lo,hi) (Optuna's distributions)
        val: a validation loader (the default --monitor is then val_loss)
        trials: how many trials the study runs in all (workers of a --join count together); default 10
        loss: as fit's --loss (default: chosen from the model's head and the targets)
        loss_args: as fit's
        epochs: each trial's epochs (default 1)
        metrics: as fit's --metrics
        monitor: the value a trial is judged by (its best over the epochs); default val_loss, else loss
        patience: as fit's: a trial stops after this many epochs without improving
        sampler: tpe (default), random, or grid (every entry a list)
        pruner: median (default, as optuna.create_study), asha (successive halving), hyperband, or none
        seed: the sampler's seed; trial N's model is built after torch.manual_seed(SEED + N) (default: drawn once)
        target_dtype: as fit's
        log: a folder: sweep.json, the study (study.journal) and a run folder per trial (trial_NNNN), which
            `torch runs ls` and TensorBoard read
        storage: where the study lives: sqlite:///FILE.db, postgresql://…, mysql://… or a journal FILE
            (default: DIR/study.journal with --log, else memory)
        study: the study's name (default: the --log folder's name, else "sweep")
        join: the name of a study in --storage to work on as one more worker (its definition is the study's)
        resume: continue the sweep in --log DIR: finished trials are kept, an interrupted one runs again
        vectorize: trials asked for at once and trained together: those of one architecture as one vectorised
            model (torch.func; SGD, Adam, AdamW; no dropout, BatchNorm or scheduler), up to 1 GiB of stacked
            weights and optimizer state; 1 trains one at a time. Default 16: TPE's first 10 trials are random anyway
        detach: run as a job and print its job:// at once
        json: trial rows as JSON lines
    """
    o = dict(locals())
    del o["ctx"]
    prepared = _prepare(ctx, o)
    columns = ["trial", "state", prepared.definition["monitor"], "epochs"] + list(prepared.space) + ["seconds"]
    notes = list(prepared.notes)
    job = jobs.start(ctx, "sweep", lambda report, should_stop: runner.run(ctx, prepared, report, should_stop),
                     columns, uses=(data, val), notes=notes)
    return job.handle if detach else follow.reply(ctx, job, "run", as_json=json)


def _prepare(ctx, o):
    """The runner's Sweep, every check done: definition, study, --log's sweep.json."""
    if o["vectorize"] < 1:
        raise bad_argument("--vectorize must be at least 1 (1 trains one trial at a time)")
    mode = "join" if o["join"] else "resume" if o["resume"] else "new"
    if mode == "join" and (o["resume"] or o["storage"] is None):
        raise TorchshError("missing_argument", "--join STUDY works on a study in --storage", "torch sweep --join "
                           "NAME --storage sqlite:///sweep.db --data $L")
    log, held_file = o["log"], None
    if mode == "resume":
        if log is None:
            raise TorchshError("missing_argument", "--resume continues the sweep in --log DIR",
                               "torch sweep --resume --log runs/s1 --data $L")
        held_file = setup.read_sweep_file(log)
    elif mode == "new" and log is not None:
        setup.refuse_a_sweep_there(log)
    elif mode == "join" and log is not None:  # its workers kept: a later --resume there gives theirs back
        held_file = setup.joined_sweep_file(log, o["join"])
    studies.optuna()  # missing_extra now, not in the job
    definition = setup.definition(o) if mode == "new" else None
    url = o["storage"] or (held_file or {}).get("storage")
    if o["storage"] is None and "***@" in (url or ""):  # sweep.json keeps it masked (studies.shown)
        raise TorchshError("missing_argument", "sweep.json keeps --storage %s without its password" % url,
                           "give --storage URL again, with the password")
    name = o["join"] or o["study"] or (held_file or {}).get("study") or (
        os.path.basename(os.path.normpath(log)) if log else "sweep")
    kept = studies.storage(ctx, url, log)
    return _open(ctx, o, mode, definition, kept, name, url, held_file)


def _open(ctx, o, mode, definition, kept, name, url, held_file):
    held = definition
    if mode != "new":  # the study's definition; the sampler seeded apart on a joining worker
        probe = studies.open_study(kept, name, None, None, None, "join")
        held = dict(studies.definition_of(probe))
        setup.check_same(held, o, mode)
        if mode == "resume" and o["trials"] is not None:
            held["trials"] = o["trials"]
    parsed = spaces.parse(held["space"])
    worker = setup.worker_id()
    seed = held["seed"] if mode != "join" else None  # two workers of one seed would draw the same values
    study = studies.open_study(kept, name, held, studies.sampler(held["sampler"], seed, parsed),
                               studies.pruner(held["pruner"], held["epochs"]), mode)
    notes = []
    if mode == "resume":
        again = setup.give_back_interrupted(study, (held_file or {}).get("workers", []))
        if again:
            notes.append("%d trial(s) interrupted by a killed daemon run again" % again)
        if o["trials"] is not None:  # --trials may grow: the study says so to later workers
            study.set_user_attr(studies.DEFINITION_ATTR, held)
    if o["log"] is not None:
        workers = (held_file or {}).get("workers", []) + [worker]
        setup.write_sweep_file(o["log"], {"definition": held, "study": name, "storage": studies.shown(url),
                                          "workers": workers})
    target = DTYPES[held["target_dtype"]] if held.get("target_dtype") else None
    return runner.Sweep(definition=held, space=parsed, data=o["data"], val=o["val"], study=study, log=o["log"],
                        target_dtype=target, vectorize=o["vectorize"], worker=worker, notes=notes)
