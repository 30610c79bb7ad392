"""Learning-rate schedulers: `torch sched KIND OPT [--flags]` -> sched://… for every
torch.optim.lr_scheduler class, `sched step S [--metric M]`, `sched lr S`, `sched list`.

Kinds are the snake_case class names (cosine_annealing_lr, one_cycle_lr, sequential_lr,
reduce_lr_on_plateau, …), the class names themselves, and short words: cosine, exponential,
one_cycle, linear (warmup), sequential, plateau, multi_step, constant, polynomial, cyclic,
warm_restarts, chained. StepLR is `step_lr` (`sched step` steps a scheduler). Options and defaults
are PyTorch's, e.g. cosine annealing: lr_t = η_min + (lr_0 - η_min)(1 + cos(π t / T_max)) / 2.
Schedulers that combine others take their handles: `torch sched sequential $opt $warm $cos --milestones 5`.
LambdaLR and MultiplicativeLR are left out: their argument is Python code.
"""
import torch

from torchsh.errors import TorchshError, bad_argument
from torchsh.history import forms, verbforms
from torchsh.recipes.base import record
from torchsh.results import Table
from torchsh.table import classes as tables, docargs
from torchsh.table.from_torch import first_paragraph, summary_line
from torchsh.table.signature import class_args, fit_values
from torchsh.table.spec import OpSpec, Overload
from torchsh.verbs import verb

_VERB_WORDS = {"step", "lr", "list"}


def generated_rows():
    short = {}
    for alias, word in tables.SCHED_SHORT.items():
        short.setdefault(word, []).append("sched." + alias)
    rows = []
    for word, cls in tables.schedulers().items():
        if word in _VERB_WORDS:
            continue
        doc, args = first_paragraph(cls), class_args(cls)
        rows.append(OpSpec(
            name="sched." + word, category="optim",
            summary=summary_line(doc) or "torch.optim.lr_scheduler.%s" % cls.__name__,
            overloads=[Overload(args=args, returns="Scheduler")], call=_builder(cls, args), verb=True, doc=doc,
            arg_docs=docargs.arg_docs(cls, [Overload(args=args)]),
            aliases=(cls.__name__,) + tuple(a[6:] for a in short.get(word, ())),
            cls=cls, class_kind="sched", words_only=True,
            word_aliases=("sched." + cls.__name__,) + tuple(short.get(word, ())), form=forms.scheduler))
    return rows


def _builder(cls, args):
    def build(ctx, **values):
        fit_values(args, values)
        if "schedulers" in values:  # SequentialLR, ChainedScheduler: handles of schedulers built before
            values["schedulers"] = [ctx.registry.get(h, "sched") for h in values["schedulers"]]
        groups = _settings(values.get("optimizer"))
        try:
            scheduler = cls(**values)
        except BaseException as e:
            _restore(values.get("optimizer"), groups)
            if isinstance(e, (ValueError, TypeError, KeyError)):
                raise bad_argument("%s: %s" % (cls.__name__, str(e).split("\n")[0]),
                                   "`torch sched %s --help` lists the options" % cls.__name__) from None
            raise
        return record(scheduler, cls.__name__, values)  # sessions and `cp` rebuild it
    build.__name__ = "sched_" + cls.__name__
    return build


def _settings(opt):
    """The optimizer's group settings (lr, momentum, initial_lr…), before a scheduler is built on it.
    PyTorch's schedulers write them in __init__ before they finish checking their arguments (CyclicLR
    sets every group's lr to base_lr, then refuses a max_lr of the wrong length): a refused scheduler
    must leave the optimizer as it was."""
    if not isinstance(opt, torch.optim.Optimizer):
        return None
    return [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]


def _restore(opt, groups):
    if groups is None:
        return
    for group, saved in zip(opt.param_groups, groups):
        params = group["params"]
        group.clear()
        group["params"] = params
        group.update(saved)


@verb("sched.step(Scheduler scheduler, *, float? metric=None) -> None", category="optim",
      writes=("scheduler",), form=verbforms.sched_step,
      examples=("s=$(torch sched step_lr $(torch optim sgd $(torch nn linear 2 1) --lr 0.1) --step_size 1); "
                "torch sched step $s && torch sched lr $s",))
def step(ctx, scheduler, metric=None):
    """scheduler.step(): advance one step (call it after `torch step OPT`). ReduceLROnPlateau needs --metric."""
    plateau = isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
    if plateau and metric is None:
        raise TorchshError("missing_argument", "ReduceLROnPlateau steps on a metric", "torch sched step $s --metric $loss")
    if metric is not None and not plateau:
        raise bad_argument("%s takes no metric" % type(scheduler).__name__)
    scheduler.step(metric) if plateau else scheduler.step()


@verb("sched.lr(Scheduler scheduler) -> Json", category="optim",
      examples=("torch sched lr $(torch sched cosine $(torch optim sgd $(torch nn linear 2 1) --lr 0.1) --T_max 10)",),
      read_only=True)
def lr(ctx, scheduler):
    """The learning rate the scheduler last set (get_last_lr): a number, or one per group as a list."""
    lrs = [v.item() if isinstance(v, torch.Tensor) else v for v in scheduler.get_last_lr()]
    return lrs[0] if len(lrs) == 1 else lrs


@verb("sched.list() -> Json", category="optim", lockfree=True,
      examples=("torch sched list",), read_only=True)
def sched_list(ctx):
    """Every scheduler kind `torch sched KIND` builds, with its short names and options."""
    rows = [{"kind": op.name[6:], "class": op.cls.__name__, "aliases": list(op.aliases[1:]),
             "signature": tables.constructor_text(op)} for op in tables.built_by(ctx.table, "optim", "sched")]
    return Table(rows, ("kind", "signature"))
