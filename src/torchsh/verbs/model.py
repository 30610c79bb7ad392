"""`torch model …`: model files as they are. `model inspect FILE` lists what a .safetensors, .npy, .npz or
torch.save .pt holds from its headers alone (formats/headers.py): nothing is unpickled, and a multi-GB
safetensors file answers at once; a torchsh .safetensors (`nn save`, a checkpoint) shows the model's card
(contract/card.py) as `contract`. `model card M` shows a held model's. `model open SOURCE` makes a model handle from torchvision's or timm's
registry, a torch.export archive or the user's own class (recipes/modelopen.py). `model export M
FILE.onnx|FILE.pt2` writes a model for other runtimes (models/export.py). docs/models.md has the formats.
"""
from torchsh import memory
from torchsh.contract import card as cards
from torchsh.formats import headers
from torchsh.models import export as exporter
from torchsh.recipes import modelopen
from torchsh.text.columns import print_table
from torchsh.verbs import verb


class Inspection(dict):
    """JSON under --json and through the API; a header line and a table of tensors (or storages) on a terminal."""

    def text(self):
        head = "%s  %s  %d bytes" % (self["file"], self["format"], self["bytes"])
        if "storages" in self:
            head += "  %d storages" % len(self["storages"])
        if self["format"] == "torchscript":
            head += "\nTorchScript: `torch nn jit_load FILE` opens it"
        if "globals_needed" in self:
            needed = self["globals_needed"]
            head += ("\nglobals beyond weights_only: " + " ".join(needed)) if needed else \
                "\nloads with weights_only=True (no other globals)"
        for key, value in sorted(self["metadata"].items()):
            head += "\n%s: %s" % (key, value if len(str(value)) <= 200 else str(value)[:200] + "…")
        head += "".join("\n" + line for line in cards.lines(self.get(cards.STORED_KEY)))
        rows = [(t["key"], t["dtype"], t["shape"], t["bytes"]) for t in self["tensors"]]
        return head + "\n" + (print_table(rows, ("key", "dtype", "shape", "bytes")) if rows else "")


@verb("model.inspect(Path file) -> Json", category="nn",
      examples=("torch nn save $(torch nn linear 3 2) m.safetensors && torch model inspect m.safetensors",),
      read_only=True)
def inspect(ctx, file):
    """What a model or tensor file holds, from its headers alone: format, keys, dtypes, shapes, bytes, metadata;
    for a torch.save .pt its storages and the globals it needs beyond weights_only. Nothing is unpickled.
    A torchsh .safetensors also shows what its model's data stands for: classes, one-hot categories, standardization."""
    found = Inspection(headers.inspect(file))
    kept = cards.from_stored(headers.torchsh_metadata(found["metadata"]))
    if kept:
        found[cards.STORED_KEY] = kept
    return found


class Card(dict):
    """A model's card: JSON under --json and through the API, a record in Nushell, a line per fact on a terminal."""

    def text(self):
        shown = cards.lines(self)
        return "\n".join(shown) + "\n" if shown else "no card: the model was not trained by `torch fit`\n"


@verb("model.card(Module model) -> Json", category="nn", lockfree=True,
      examples=("printf 'a,b,y\\n1,2,x\\n3,4,z\\n5,1,x\\n' > t.csv && m=$(torch nn linear 2 2) && "
                "torch fit $m $(torch optim sgd $m) $(torch data loader $(torch data open t.csv --target y) "
                "--batch_size 2) --loss cross_entropy >/dev/null && torch model card $m",), read_only=True)
def model_card(ctx, model):
    """What the model expects and what its output means, as `torch fit` recorded it from the data it trained
    on: its input fields (shape, dtype, a table's columns in order), one-hot categories, preprocessing
    (standardization's statistics), task (regression, binary with one logit, multiclass, multilabel) and its
    decision rule, the target's shape and dtype, the output's shape and the classes' names. `predict`, `fit
    --val`, `serve` and `model export` all read it (docs/models.md#the-models-card); it travels with `nn save`,
    checkpoints, sessions and runs. Empty for a model no fit has trained."""
    return Card(cards.of_model(model))


# -- model export: a model out as ONNX or a torch.export archive (models/export.py) ------------------------
class Exported(dict):
    """JSON under --json and through the API; on a terminal one line: the file, its format, the time, the check."""

    def text(self):
        line = "%s  %s  %.1f s" % (self["file"], self["format"], self["seconds"])
        if self.get("baked"):
            line += "  %s baked in" % "+".join(self["baked"])
        if self["checked_with"]:
            line += "  max |Δ| = %.3g (%s)" % (self["max_abs_diff"], self["checked_with"])
        return line + "\n"


_EXPORT_FLAGS = "int[]? dynamic=None, float tolerance=1e-05, bool raw=False) -> Json"


@verb("model.export(Module model, OutPath file, *, int[] example, " + _EXPORT_FLAGS,
      "model.export(Module model, OutPath file, *, Tensor example, " + _EXPORT_FLAGS, category="nn",
      examples=("torch model export $(torch nn sequential 'linear 4 8' relu 'linear 8 2') mlp.pt2 --example 1,4",
                "torch model export $(torch nn sequential 'linear 4 8' relu 'linear 8 2') mlp.onnx --example 1,4 "
                "--dynamic 0"))
def model_export(ctx, model, file, example, dynamic=None, tolerance=1e-05, raw=False):
    """Export the model as .onnx (PyTorch's dynamo exporter) or .pt2 (torch.export), traced on --example.

    A model `torch fit` trained carries a card (`torch model card M`): its preprocessing (standardization's
    statistics) is baked into the graph, which then takes the raw rows `torch predict` takes; the input is
    named after the card's field, the output "output", and the columns and classes go into the file's
    metadata. A preprocessing the graph cannot hold is refused unless --raw. The written model is run on the
    example and compared with the model in PyTorch (an .onnx by onnxruntime, when installed): a max |Δ| over
    --tolerance refuses and writes nothing. Eval mode while exported, the model's mode restored; the save
    is atomic.

    Args:
        example: a shape (normal noise in the parameters' dtype and device, the same every time) or a tensor
        dynamic: dims of the example that may take any size in the exported model (0: the batch)
        tolerance: the largest |Δ| accepted between the exported model's output and PyTorch's
        raw: export the bare model, without its card's preprocessing (stderr says what its inputs need first)
    """
    budget = getattr(ctx.app, "memory", None)
    if budget is not None and budget.limit is not None:  # refused before the example or any copy is made
        need, rss = exporter.memory_needed(model, example), memory.rss_bytes()
        if rss + need > budget.limit:
            raise memory.over_budget(need, rss, budget.limit, budget.rule)
    return Exported(exporter.export(model, file, example, dynamic, tolerance, raw))


# `torch model open`: a model from a library's registry, a torch.export archive or the user's own class
@verb("model.open(str source, *, Json? args=None, int? num_classes=None, Path? weights=None) -> Module",
      category="nn",
      no_form="a model opened from a library, a .pt2 archive or a .py class is not written yet",
      examples=("printf 'import torch\\nclass Net(torch.nn.Module):\\n    def __init__(self, hidden=8):\\n"
                "        super().__init__(); self.a = torch.nn.Linear(2, hidden); self.b = torch.nn.Linear(hidden, 1)\\n"
                "    def forward(self, x):\\n        return self.b(torch.relu(self.a(x)))\\n' > mynet.py && "
                "torch model open mynet.py:Net --args '{\"hidden\": 16}' | torch nn info",
                "python -c 'import torch; m = torch.nn.Linear(3, 2).eval(); "
                "torch.export.save(torch.export.export(m, (torch.randn(4, 3),)), \"m.pt2\")' && "
                "torch forward $(torch model open m.pt2) $(torch randn 4 3)"))
def model_open(ctx, source, args=None, num_classes=None, weights=None):
    """Open a model as a handle: torchvision:NAME or timm:NAME (the architecture, random weights; the
    `vision` extra), FILE.pt2 (a torch.export archive, scanned so that nothing beyond weights_only is ever
    unpickled; its graph runs as it was exported, never in train mode: fit refuses it), or FILE.py:CLASS, your
    own nn.Module class: this RUNS that file's code in the daemon, as `python -c 'from FILE import CLASS'` would.

    Args:
        source: torchvision:NAME, timm:NAME, FILE.pt2 or FILE.py:CLASS (FILE relative to your folder)
        args: the constructor's keyword arguments as a JSON object, e.g. '{"hidden": 16}'
        num_classes: the classifier's outputs (torchvision and timm models take it)
        weights: a state dict loaded after, strictly, as `torch nn load` reads it (.safetensors, .pt, a folder)
    """
    return modelopen.open_model(ctx, source, args, num_classes, weights)
