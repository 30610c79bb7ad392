"""`torch model …`: model files as they are, before anything is loaded. `model inspect FILE` lists what a
.safetensors, .npy, .npz or torch.save .pt holds from its headers alone (formats/headers.py): nothing is
unpickled, and a multi-GB safetensors file answers at once; a torchsh .safetensors (`nn save`, a checkpoint)
shows what the model's data stands for (data/meaning.py) as `data`. docs/models.md has the formats.
"""
from torchsh.data import meaning
from torchsh.formats import headers
from torchsh.verbs import verb
from torchsh.verbs.nn import print_table


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
        head += "".join("\n" + line for line in meaning.lines(self.get("data")))
        rows = [(t["key"], t["dtype"], t["shape"], t["bytes"]) for t in self["tensors"]]
        return head + "\n" + (print_table(rows, ("key", "dtype", "shape", "bytes")) if rows else "")


@verb("model.inspect(Path file) -> Json", category="nn",
      examples=("torch nn save $(torch nn linear 3 2) m.safetensors && torch model inspect m.safetensors",))
def inspect(ctx, file):
    """What a model or tensor file holds, from its headers alone: format, keys, dtypes, shapes, bytes, metadata;
    for a torch.save .pt its storages and the globals it needs beyond weights_only. Nothing is unpickled.
    A torchsh .safetensors also shows what its model's data stands for: classes, one-hot categories, standardization."""
    found = Inspection(headers.inspect(file))
    kept = meaning.valid(headers.torchsh_metadata(found["metadata"]).get("data"))
    if kept:
        found["data"] = kept
    return found
