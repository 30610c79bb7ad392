"""The checkpoint format, without pickle: model, optimizer, scheduler and the CPU RNG in one .safetensors file.

The model's state_dict under `model.<key>`, the optimizer's and scheduler's state tensors under `optim.N` /
`sched.N`, PyTorch's CPU RNG state under `rng.cpu`, and everything else (hyperparameters, step counts, the
structure of the state dicts, and the model's card: contract/card.py's `contract`, which
`restore` attaches to the model again) as JSON in the file's metadata (state_file.encode). `torch checkpoint save|load`
(verbs/checkpoint.py) write and read it; `torch fit`'s checkpoints (train/resume.py) are the same file with a `fit`
part added. Restoring is atomic: the file is checked against the model, optimizer and scheduler before any
of them changes.
"""
import torch

from torchsh.contract import card as cards
from torchsh.errors import TorchshError
from torchsh.formats import statefile as state_file, stfile

FORMAT = "torchsh-checkpoint-1"


def capture(model, optimizer=None, scheduler=None):
    """(tensors, metadata) of a checkpoint of these objects and the CPU RNG, for stfile.write."""
    tensors = state_file.model_tensors(model, "model.")
    meta = {"format": FORMAT, "model": type(model).__name__, "rng": True}
    if cards.of_model(model):
        meta[cards.STORED_KEY] = cards.of_model(model)  # its card: inputs, preprocessing, task, classes
    tensors["rng.cpu"] = torch.get_rng_state()
    if optimizer is not None:
        meta["optimizer"] = {"kind": type(optimizer).__name__,
                             "state": state_file.encode(optimizer.state_dict(), "optim", tensors)}
    if scheduler is not None:
        meta["scheduler"] = {"kind": type(scheduler).__name__,
                             "state": state_file.encode(scheduler.state_dict(), "sched", tensors)}
    return tensors, meta


def restore(file, model, optimizer=None, scheduler=None, rng=True):
    """Load a checkpoint file into a model built the same way (and its optimizer and scheduler); strict and atomic."""
    tensors, meta = stfile.read(file)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise TorchshError("file_error", "%s is not a torchsh checkpoint" % file, "`torch nn load` reads plain weights")
    weights = model_part(tensors)
    state_file.check_fits(model, weights, "checkpoint")
    try:
        opt_state = _part(meta, "optimizer", optimizer, tensors)
        sched_state = _part(meta, "scheduler", scheduler, tensors)
        if opt_state is not None:
            _check_optimizer(optimizer, opt_state)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:  # metadata edited or cut short
        raise TorchshError("file_error", "%s is a damaged torchsh checkpoint: bad state metadata (%s: %s)"
                           % (file, type(e).__name__, str(e)[:100])) from None
    with torch.no_grad():
        model.load_state_dict(weights, strict=True)
    if opt_state is not None:
        optimizer.load_state_dict(opt_state)
    if sched_state is not None:
        scheduler.load_state_dict(sched_state)
    if rng and "rng.cpu" in tensors:
        torch.set_rng_state(tensors["rng.cpu"])
    cards.attach(model, cards.from_stored(meta))


def model_part(tensors):
    """The model's state_dict among a checkpoint's tensors: its `model.` keys, named without the prefix."""
    return {k[6:]: v for k, v in tensors.items() if k.startswith("model.")}


def _part(meta, name, obj, tensors):
    """The decoded state for the optimizer or scheduler given, after checking the file has one of its kind."""
    if obj is None:
        return None
    saved = meta.get(name)
    if saved is None:
        raise TorchshError("state_mismatch", "the checkpoint holds no %s" % name, "load without it")
    if saved["kind"] != type(obj).__name__:
        raise TorchshError("state_mismatch", "the checkpoint's %s is a %s, not a %s" % (name, saved["kind"],
                                                                                       type(obj).__name__))
    return state_file.decode(saved["state"], tensors)


def _check_optimizer(optimizer, state):
    """What Optimizer.load_state_dict would refuse half-way, refused before anything changes."""
    groups = state["param_groups"]
    own = optimizer.param_groups
    if len(groups) != len(own) or any(len(g["params"]) != len(o["params"]) for g, o in zip(groups, own)):
        raise TorchshError("state_mismatch", "the checkpoint's optimizer has groups of %s parameters, this one %s"
                           % ([len(g["params"]) for g in groups], [len(o["params"]) for o in own]))
    params = {i: p for g, o in zip(groups, own) for i, p in zip(g["params"], o["params"])}
    for i, st in state["state"].items():
        for key, value in st.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != params[i].shape:
                raise TorchshError("state_mismatch", "optimizer state %s of parameter %d has shape %s, the parameter %s"
                                   % (key, i, list(value.shape), list(params[i].shape)))
