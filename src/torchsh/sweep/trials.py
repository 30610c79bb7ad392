"""One `torch sweep` trial as a `torch fit` run: its model and optimizer built from the --model and --opt
templates with the trial's values, its FitPlan (the sweep's data, loss and schedule), its run folder.

A trial is repeatable alone: its model is built right after `torch.manual_seed(SEED + number)`, and every
trial starts from the loaders' state when the sweep started (the sweep puts them back before each trial
or batch of trials). So its run.json's trial section reads as the commands that repeat it:

    torch manual_seed SEED+N; m=$(torch nn MODEL…); o=$(torch optim OPT… $m …); torch fit $m $o $DATA …

--model may also be `lm lora LM --r {r} …` (a LoRA adapter of a language model `torch lm open` made): then
`a=$(torch lm lora LM …)` in place of `torch nn`. Such a trial trains alone (an adapter is no module to stack)
and is taken out of LM's base model when it ends, as an nn trial's model is let go: its weights stay only in
its run folder (DIR/trial_NNNN/best.safetensors, which `torch checkpoint load` puts into the adapter its
words make again).
"""
import os
import shlex

import torch

from torchsh.call import nested
from torchsh.contract import card as cards
from torchsh.errors import TorchshError, bad_argument
from torchsh.sweep import space as spaces
from torchsh.train import fitcard
from torchsh.train.logs import rundir
from torchsh.train.loss.functions import loss_function, loss_options
from torchsh.train.plan import FitPlan


def folder(log, number):
    return os.path.join(log, "trial_%04d" % number) if log else None


def seed_of(definition, number):
    return definition["seed"] + number


def build(ctx, sweep, trial):
    """(FitPlan, notes) of one trial: refusals of its words (a layer that cannot take a value) are the
    trial's failure, said as the trial's, not the sweep's."""
    d, params = sweep.definition, trial.params
    where = folder(sweep.log, trial.number)
    if where is not None:  # a run already there (another study's trial, a fit) is never written over
        rundir.refuse_a_run_there(where, where)
    model_words = spaces.fill(d["model"], params)
    opt_words = spaces.fill(d["opt"], params)
    torch.manual_seed(seed_of(d, trial.number))
    model = _model(ctx, model_words)
    try:
        return _plan(ctx, sweep, trial, model, where, model_words, opt_words)
    except BaseException:
        remove_adapter(model)  # a trial refused after its adapter was made leaves the base as it found it
        raise


def _plan(ctx, sweep, trial, model, where, model_words, opt_words):
    d, params = sweep.definition, trial.params
    optimizer = _optimizer(ctx, model, opt_words)
    notes, target_dtype = [], sweep.target_dtype
    loss, item, output_shape = fitcard.choose_loss(model, sweep.data.dataset, d["loss"], target_dtype, notes)
    card, contract = fitcard.prepare(model, sweep.data, sweep.val, loss, item, output_shape, target_dtype,
                                     d["metrics"] or (), notes)
    trial_record = {"study": sweep.study_name, "number": trial.number, "params": dict(params),
                    "seed": seed_of(d, trial.number), "model": model_words, "opt": opt_words,
                    "model_argv": shlex.split(model_words)}  # nu: `torch nn ...$argv` (lm words: `torch ...$argv`)
    plan = FitPlan(model=model, optimizer=optimizer, loader=sweep.data, val=sweep.val, loss=loss_function(loss),
                   loss_args=loss_options(d["loss_args"], loss, model, ctx.registry), loss_name=loss,
                   epochs=d["epochs"], metrics=tuple(d["metrics"] or ()), monitor=d["monitor"], patience=d["patience"],
                   target_dtype=target_dtype, log=where, **contract,
                   command=_command(d, sweep.val is not None), trial=trial_record)
    cards.attach(model, fitcard.with_loss_args(card, plan.loss_args))  # run.json, predict, evaluate, serve read it
    return plan, notes


def adapts_a_language_model(words):
    """Whether --model WORDS make a LoRA adapter (`lm lora LM …`): its trials train one at a time, never
    stacked, each taken out of the base model when it ends (runner.py)."""
    return words.split()[:1] == ["lm"]


def _model(ctx, words):
    if adapts_a_language_model(words):
        return _adapter(ctx, words)
    op, rest = nested.resolve(ctx, ["nn"] + shlex.split(words))
    if op.class_kind != "nn" and op.name != "nn.sequential":
        raise bad_argument("--model %r is not a layer or nn sequential" % words,
                           "e.g. --model \"sequential 'linear 784 {width}' relu 'linear {width} 10'\"")
    model = nested.call_words(ctx, op, rest, "--model")
    if not isinstance(model, torch.nn.Module):
        raise bad_argument("--model %r does not make a module" % words)
    return model


def _adapter(ctx, words):
    """`lm lora LM --r {r} …`: a new adapter injected into LM's base model, as `torch lm lora` makes one."""
    op, rest = nested.resolve(ctx, shlex.split(words))
    if op.name != "lm.lora":
        raise bad_argument("--model %r: of the lm words, a sweep trains `lm lora` adapters" % words,
                           "e.g. --model \"lm lora $m --r {r} --alpha 16 --targets q_proj,v_proj\"")
    noted = getattr(ctx, "noted", None)
    try:
        return nested.call_words(ctx, op, rest, "--model")
    finally:
        ctx.noted = noted  # what `lm lora` notes for its history entry is not the sweep's


def remove_adapter(model):
    """A trial's adapter taken out of its language model's base (the base as the trial found it); other
    models: nothing to do (the trial's run folder keeps its weights either way)."""
    from torchsh.lm import adapters
    lm = getattr(model, "lm", None) if isinstance(model, adapters.Adapter) else None
    if lm is not None and lm.adapters.get(model.adapter_name) is model:
        adapters.remove(lm, model.adapter_name)


def _optimizer(ctx, model, words):
    """`adamw --lr 1e-3` built over the model's parameters: the model is held for the build, by a handle
    nobody sees, and let go at once."""
    parts = shlex.split(words)
    if not parts:
        raise TorchshError("missing_argument", "--opt is empty", "e.g. --opt 'adamw --lr {lr}'")
    op, rest = nested.resolve(ctx, ["optim", parts[0]])
    if op.class_kind != "optim" or rest:
        raise bad_argument("--opt %r does not start with an optimizer" % words, "`torch optim list` shows them")
    registry = ctx.app.registry
    handle = registry.put(model, "nn", None)
    try:
        return nested.call_words(ctx, op, [handle] + parts[1:], "--opt")
    finally:
        registry.free([handle])


def _command(d, has_val):
    """fit's words for run.json (what `torch runs ls` reads its options from); MODEL and OPT are the trial's."""
    words = ["torch", "fit", "MODEL", "OPT", "LOADER", "--epochs", str(d["epochs"])]
    for key in ("loss", "loss_args", "monitor", "patience"):
        if d[key] is not None:
            words += ["--" + key, str(d[key])]
    if d["metrics"]:
        words += ["--metrics", ",".join(d["metrics"])]
    return tuple(words + (["--val", "VAL_LOADER"] if has_val else []))


def architecture(model):
    """What trials must share to train as one vectorised model: the module tree and every tensor's shape."""
    return (str(type(model)),
            tuple((name, type(m).__name__) for name, m in model.named_modules()),
            tuple((name, tuple(t.shape), t.dtype) for name, t in list(model.named_parameters())
                  + list(model.named_buffers())))


def value(plan, result):
    """The trial's value for the study: the best monitored value over its epochs (what best.safetensors holds)."""
    values = [row[plan.monitor] for row in result.rows if isinstance(row.get(plan.monitor), (int, float))]
    if not values:
        return None
    return min(values) if plan.lower_is_better() else max(values)
