"""A model with its card's preprocessing in front of it, for `torch model export`: the exported graph takes
the raw inputs `torch predict` takes (contract/encode.py), not the preprocessed ones.

BAKED is the table of the card's preprocessing kinds a graph can hold, each kind the module that does one step:
- standardize: (x - mean) / std in float64, rounded once to x's dtype (float32 for an integer field): the
  arithmetic of data/standardize.py, so the graph's inputs to the model are predict's, bit for bit on the
  CPU (float64 subtraction and division are IEEE's in PyTorch and in onnxruntime alike).
A kind not in the table is refused (not_supported) with --raw as the way out: the bare model, whose graph
then expects inputs preprocessed by hand. A card's one-hot `categories` are no step: `data open --onehot`
encodes them before predict as well, so the graph takes the encoded columns, as predict does.

The graph's one input is named after the card's input field (ONNX's input_names; a .pt2's after forward's
parameter, which is the name torch.export gives it), its outputs "output"; the card's columns, classes,
task and the kinds baked in go into its metadata (metadata()). The wrapper keeps the model as `model`, so
a .pt2's weights are the model's under `model.` (`torch nn load M FILE.pt2 --strip model.`); the statistics
are constants of the graph, outside its state_dict.
"""
import inspect
import keyword
import re

import torch

from torchsh.errors import TorchshError

RAW_HINT = "--raw exports the bare model, whose graph then takes inputs already preprocessed as its card says " \
           "(`torch model card M`)"


class Standardize(torch.nn.Module):
    """One standardize step of a card: {field, mean, std}, the statistics of one item of the field."""

    def __init__(self, step):
        super().__init__()
        # not persistent: constants of the exported graph, so the archive's state_dict is the model's alone
        self.register_buffer("mean", torch.tensor(step["mean"], dtype=torch.float64), persistent=False)
        self.register_buffer("std", torch.tensor(step["std"], dtype=torch.float64), persistent=False)

    def check(self, x):
        """Refuse an example whose items are not of the statistics' shape, before anything is traced."""
        if list(x.shape[1:]) != list(self.mean.shape):
            raise TorchshError("shape_mismatch", "--example: the model's card standardizes items of shape %s, and "
                               "the example's are %s" % (list(self.mean.shape), list(x.shape[1:])),
                               "give a batch of raw rows as predict takes them, e.g. --example %s"
                               % ",".join(map(str, [1] + list(self.mean.shape))))

    def forward(self, x):
        out = (x.to(torch.float64) - self.mean) / self.std
        return out.to(x.dtype if x.is_floating_point() else torch.float32)


BAKED = {"standardize": Standardize}


class Preprocessed(torch.nn.Module):
    """The card's steps on the raw input, then the model."""

    def __init__(self, model, steps):
        super().__init__()
        self.steps = torch.nn.ModuleList(steps)
        self.model = model
        self.train(model.training)  # export's eval_mode restores the mode it found: the model's own

    def forward(self, x):
        for step in self.steps:
            x = step(x)
        return self.model(x)


def wrap(model, card, x):
    """(the model with CARD's preprocessing baked in front of it, the kinds baked); not_supported for a kind
    the table cannot bake, or a step on another input field than the one an export traces."""
    steps = card.get("preprocessing") or []
    for step in steps:
        kind = step.get("kind")
        if kind not in BAKED:
            raise TorchshError("not_supported", "the model's card preprocesses its inputs with %s, which an exported "
                               "graph cannot hold (it holds %s)" % (kind, ", ".join(sorted(BAKED))), RAW_HINT)
        if step.get("field", 0) != 0:
            raise TorchshError("not_supported", "the model's card preprocesses input field %s, and an export traces "
                               "one input, field 0" % step.get("field"), RAW_HINT)
    modules = [BAKED[step["kind"]](step).to(x.device) for step in steps]  # the statistics beside the input
    for module in modules:
        module.check(x)
    wrapped = Preprocessed(model, modules)
    _name_input(wrapped, input_name(card))
    return wrapped, [step["kind"] for step in steps]


def input_name(card):
    """The card's first input field's name as an identifier (torch.export names inputs after parameters)."""
    name = re.sub(r"\W", "_", str(_first_input(card).get("name") or "input"))
    return "_" + name if name[0].isdigit() or keyword.iskeyword(name) else name


def _first_input(card):
    """The card's input field 0 ({} when it names none, or a hand-edited card holds something else there)."""
    fields = card.get("inputs") or [{}]
    return fields[0] if isinstance(fields[0], dict) else {}


def _name_input(module, name):
    """torch.export names a graph's inputs after forward's parameters (inspect.signature): this forward's one
    parameter is NAME, so a .pt2's input is the card's field, as an .onnx's (input_names)."""
    forward = module.forward

    def named(*args):
        return forward(*args)
    named.__signature__ = inspect.Signature([inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    module.forward = named


def metadata(card, baked):
    """What a consumer of the graph needs from the card, as JSON values: the input's columns, one-hot categories,
    the classes, task and decision, and the preprocessing kinds the graph applies itself."""
    found = dict(columns=_first_input(card).get("columns"), categories=card.get("categories"), classes=card.get("classes"),
                 task=card.get("task"), decision=card.get("decision"), baked=baked)
    return {key: value for key, value in found.items() if value}


def raw_note(card, path):
    """The one line --raw leaves on stderr: what the bare graph expects done to its inputs first."""
    described = []
    for step in card.get("preprocessing") or []:
        if step.get("kind") == "standardize":
            described.append("standardized: (x - mean) / std with mean %s, std %s" % (_numbers(step["mean"]),
                                                                                    _numbers(step["std"])))
        else:
            described.append("through %s, as its card says" % step.get("kind"))
    return "--raw: %s expects inputs already %s (`torch model card M` has the statistics)" % (
        path, "; ".join(described))


def _numbers(values, shown=6):
    flat = torch.tensor(values, dtype=torch.float64).flatten().tolist()
    return "[%s%s]" % (" ".join("%.4g" % v for v in flat[:shown]), " …" if len(flat) > shown else "")
