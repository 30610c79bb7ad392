"""One row per handle kind: what a handle (`tensor://k3f00012`) can name, how each kind shows, how it is kept.

A result's kind is the first row whose Python type it is an instance of; the kind is its handle's
prefix. The census asks the row for a kind's own fields (every kind has `bytes`, an int), and
bytes_held for the tensors whose storages it holds. A session, `cp` and a distributed fit save and rebuild
an object through its row's persistence (recipes/: capture, build, state, load). A new kind is one row here.
"""
from dataclasses import dataclass
from typing import Callable

import torch
import torch.distributions
import torch.utils.data
from torch.nn.parameter import is_lazy

from torchsh.data.datasets import wrapped_datasets
from torchsh.data.loader import Loader
from torchsh.jobs.job import Job
from torchsh.lm.conversation import Conversation
from torchsh.lm.model import LanguageModel
from torchsh.recipes import datasets, distributions, modules, optimizers, tensors
from torchsh.recipes.base import Persistence, refused
from torchsh.vocab import dtype_name


@dataclass(frozen=True)
class HandleKind:
    name: str                 # the handle's prefix (`nn` in nn://…), and Entry.kind in the registry
    type: type                # objects of this Python class are held as this kind
    article: str              # how messages name one: "a module" (`… is a tensor, but a module is needed`)
    census: Callable          # obj -> its census fields besides handle/kind/age_s/scope; always `bytes`
    storages: Callable        # obj -> the tensors whose storages count in bytes_held (shared ones once)
    persist: Persistence      # how one is saved and rebuilt (a session folder, `cp`, a distributed fit)
    outlives_client: bool = False  # kept when the request that made it goes unanswered (a detached fit's job
                                   # was asked to outlive its client); other kinds are freed then (made.py)


def tensor_bytes(values):
    return sum(t.nelement() * t.element_size() for t in values
               if isinstance(t, torch.Tensor) and not t.is_meta and not is_lazy(t))


def _tensor_fields(t):
    if is_lazy(t):  # `nn parameters` of a lazy module: no shape or storage yet
        return dict(shape=None, dtype=dtype_name(t.dtype), device=str(t.device), bytes=0,
                    requires_grad=t.requires_grad, uninitialized=True)
    return dict(shape=list(t.shape), dtype=dtype_name(t.dtype), device=str(t.device),
                bytes=t.nelement() * t.element_size(), requires_grad=t.requires_grad)


def _module_fields(m):
    """A model's parameters and buffers (a lazy module's parameters have no shape until its first forward)."""
    params = list(m.parameters())
    sized = [p for p in params if not is_lazy(p)]
    row = dict(type=type(m).__name__, layers=len(m._modules), parameters=sum(p.numel() for p in sized),
               bytes=tensor_bytes(sized + list(m.buffers())),
               device=str(params[0].device) if params else "cpu", training=m.training)
    if len(sized) < len(params):
        row["uninitialized"] = len(params) - len(sized)
    return row


def _optimizer_fields(o):
    # list(): a C-level copy under the GIL, so a step running meanwhile (it adds state) cannot
    # break the iteration; the census never waits for the tensor lock.
    states = list(o.state.values())
    groups = list(o.param_groups)
    lr = groups[0].get("lr") if groups else None  # the first group's: what `torch optim lr` reports
    return dict(type=type(o).__name__, lr=_number(lr),
                bytes=tensor_bytes(v for s in states for v in list(s.values())))


def _number(lr):
    """A learning rate as the census shows it: a float (PyTorch also takes a 1-element tensor), else None."""
    try:
        return float(lr)
    except (TypeError, ValueError, RuntimeError, OverflowError):
        return None


def _scheduler_fields(s):
    return dict(type=type(s).__name__, bytes=0)  # a scheduler holds numbers, no tensors


def _dataset_tensors(d):
    """The tensors a dataset holds in memory (a TensorDataset's, a file's fields read whole), through the
    datasets it wraps; a memory-mapped or lazily read file's rows are not held."""
    out = []
    for x in wrapped_datasets(d):
        held = x.held_tensors() if hasattr(x, "held_tensors") else getattr(x, "tensors", ())
        out += [t for t in held if isinstance(t, torch.Tensor)]
    return out


def _dataset_fields(d):
    try:
        length = len(d)
    except TypeError:  # an iterable-style dataset has no length
        length = None
    row = dict(type=type(d).__name__, length=length, bytes=tensor_bytes(_dataset_tensors(d)))
    mapped = sum(getattr(x, "mapped_bytes", 0) for x in wrapped_datasets(d))
    if mapped:
        row["mapped"] = mapped  # file bytes read on demand (memory-mapped .npy, lazy .safetensors), not held
    return row


def _job_fields(j):
    return dict(type=j.verb_word, state=j.state, progress=j.progress_text(), bytes=0)  # what it uses has handles


def _loader_fields(loader):
    """A loader holds its dataset (its own handle's bytes) and a position: bytes 0."""
    return dict(type="DataLoader", batches=len(loader), batch_size=loader.batch_size, epoch=loader.epoch,
                position=loader.position, bytes=0)


def _distribution_tensors(d):
    """The parameter tensors a distribution holds (and the ones it derived and cached, probs from logits)."""
    return [v for v in vars(d).values() if isinstance(v, torch.Tensor)]


def _distribution_fields(d):
    return dict(type=type(d).__name__, batch_shape=list(d.batch_shape), event_shape=list(d.event_shape),
                bytes=tensor_bytes(_distribution_tensors(d)))


def _lm_fields(lm):
    """A language model's base weights (its adapters' weights are theirs: `nn://` handles of their own)."""
    base = lm.base_parameters()
    return dict(type=type(lm.model).__name__, folder=lm.folder, parameters=sum(p.numel() for p in base),
                dtype=dtype_name(lm.dtype), device=str(lm.device), adapters=sorted(lm.adapters), active=lm.active,
                bytes=tensor_bytes(base + list(lm.model.buffers())))


_LM_NOT_KEPT = refused("a language model is not saved: its folder is where it lives (an adapter is: `torch lm save`)",
                       "`torch lm open DIR` again in the new daemon")
_CHAT_NOT_KEPT = refused("a conversation is not saved: its model is not (`torch lm messages` writes its messages out)",
                         "`torch lm chat LM --new` again in the new daemon")
_JOB_NOT_KEPT = refused("a job is not saved (its model, optimizer and loader are, as they stand)",
                        "`torch job wait` first to save a finished run's state")
HANDLE_KINDS = {k.name: k for k in (
    HandleKind("tensor", torch.Tensor, "a tensor", _tensor_fields, lambda t: [t], tensors.TENSOR),
    HandleKind("nn", torch.nn.Module, "a module", _module_fields,
               lambda m: list(m.parameters()) + list(m.buffers()), modules.MODULE),
    HandleKind("optim", torch.optim.Optimizer, "an optimizer", _optimizer_fields, lambda o: [], optimizers.OPTIMIZER),
    HandleKind("sched", torch.optim.lr_scheduler.LRScheduler, "a scheduler", _scheduler_fields, lambda s: [],
               optimizers.SCHEDULER),
    HandleKind("data", torch.utils.data.Dataset, "a dataset", _dataset_fields, _dataset_tensors, datasets.DATASET),
    HandleKind("loader", Loader, "a loader", _loader_fields, lambda loader: _dataset_tensors(loader.dataset),
               datasets.LOADER),
    HandleKind("dist", torch.distributions.Distribution, "a distribution", _distribution_fields,
               _distribution_tensors, distributions.DISTRIBUTION),
    HandleKind("lm", LanguageModel, "a language model", _lm_fields,
               lambda lm: lm.base_parameters() + list(lm.model.buffers()), _LM_NOT_KEPT),
    HandleKind("chat", Conversation, "a conversation", Conversation.census, lambda c: [], _CHAT_NOT_KEPT),
    HandleKind("job", Job, "a job", _job_fields, lambda j: [], _JOB_NOT_KEPT, outlives_client=True),
)}
KINDS = tuple(HANDLE_KINDS)  # the handle prefixes, in census order


def kind_of(obj):
    """The handle kind an object is held as, or None for a plain value (a number, a list, text)."""
    t = type(obj)
    try:
        return _KIND_OF_TYPE[t]
    except KeyError:  # the rows' isinstance answer, once per Python type (every op's result asks)
        kind = _KIND_OF_TYPE[t] = next((k.name for k in HANDLE_KINDS.values() if isinstance(obj, k.type)), None)
        return kind


_KIND_OF_TYPE = {}
