"""Module weights in files: `nn save M FILE.safetensors|.pt|.pth`, `nn load M FILE`, `nn jit_load FILE`.

Files hold PyTorch's state_dict key names (`0.weight`, `bn.running_mean`, buffers included), so a
file saved here loads in Python with `model.load_state_dict(safetensors.torch.load_file(f))` or
`model.load_state_dict(torch.load(f, weights_only=True))`, and the other way round. A `.pt`/`.pth` is
written by torch.save(model.state_dict()) itself: tensors in an OrderedDict, which weights_only reads.
Saves are atomic (fileio.atomic_write: temp file, fsync, rename) and replace an existing file, as `>` and
torch.save do. `nn load` reads what real checkpoints look like (formats/statedicts.py: Lightning's .ckpt,
DataParallel's `module.` keys, Hugging Face sharded folders, a torch.export .pt2's weights; pickles with
weights_only=True only; TorchScript refused, `nn jit_load` opens it), renames
keys and prints the diff (formats/stateload.py); strict and atomic unless --partial.

The model's card (contract/card.py: its inputs, preprocessing, task and classes) goes into a .safetensors'
metadata, as JSON under "torchsh" ({"contract": …}, as checkpoints keep it), and `nn load` of a torchsh
.safetensors attaches it again; a torchsh checkpoint (`checkpoint save`, fit's best/last) loads its model
part. A .pt stays exactly torch.save(state_dict), nothing but tensors; its card goes beside it, in
FILE.card.json (Hugging Face keeps a processor's config beside its weights the same way), which `nn load` of
that .pt reads. A save of a model without a card removes a card left beside the file it replaces: the old
card would describe other weights.
"""
import json
import os

import torch

from torchsh import fileio
from torchsh.contract import card as cards
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import headers, statedicts, statefile as state_file, stateload, stfile
from torchsh.history import files as history_files
from torchsh.models import checkpoint
from torchsh.text.columns import print_table
from torchsh.verbs import verb


@verb("nn.save(Module model, OutPath file) -> None", category="nn",
      examples=("torch nn save $(torch nn linear 3 2) model.safetensors",
                "torch nn save $(torch nn linear 3 2) model.pt && "
                "python -c 'import torch; print(list(torch.load(\"model.pt\", weights_only=True)))'"))
def nn_save(ctx, model, file):
    """Save the model's state_dict (parameters and buffers) to .safetensors, .pt or .pth, atomically.
    A .pt/.pth is Python's torch.save(model.state_dict()): torch.load(FILE, weights_only=True) reads it.
    The model's card (what `fit` recorded: inputs, preprocessing, task, classes) goes with it: in a
    .safetensors' metadata, beside a .pt in FILE.card.json (`torch model card M` shows it)."""
    kept = cards.of_model(model)
    if file.endswith((".pt", ".pth")):
        state = model.state_dict()
        fileio.atomic_write(file, lambda tmp: torch.save(state, tmp))
        _write_sidecar(file, kept)
    elif file.endswith(".safetensors"):
        stfile.write(file, state_file.model_tensors(model), {cards.STORED_KEY: kept} if kept else None)
    else:
        raise bad_argument("nn save writes .safetensors, .pt or .pth files, not %s" % os.path.basename(file),
                           "name the file MODEL.safetensors, or MODEL.pt for Python's torch.load")
    return None


class Loaded(dict):
    """The load's diff (formats/stateload.LoadDiff): JSON under --json and through the API, a record in
    Nushell; on a terminal a line of what loaded and a table of the keys that did not."""

    def text(self):
        head = "loaded %d of %d keys from %s\n" % (self["loaded"], self["of"], self["file"])
        head += "".join(line + "\n" for line in cards.lines(self.get(cards.STORED_KEY)))
        rows = ([("missing", k, "", "") for k in self["missing"]]
                + [("unexpected", k, "", "") for k in self["unexpected"]]
                + [("shape-mismatched", m["key"], m["file"], m["model"]) for m in self["mismatched"]])
        return head + (print_table(rows, ("", "key", "file shape", "model shape")) if rows else "")


@verb("nn.load(Module model, Path file, *, str? key=None, str[]? strip=None, str[]? map=None, bool partial=False, "
      "str[]? trust=None) -> Json", category="nn", writes=("model",), form=history_files.lines,
      examples=("m=$(torch nn linear 3 2); "
                "torch nn save $m model.safetensors && torch nn load $(torch nn linear 3 2) model.safetensors",
                "python -c 'import torch; torch.save({\"state_dict\": {\"model.weight\": torch.zeros(2, 3), "
                "\"model.bias\": torch.zeros(2)}, \"epoch\": 3}, \"l.ckpt\")' && "
                "torch nn load $(torch nn linear 3 2) l.ckpt --key state_dict --strip model.",
                "python -c 'import torch; torch.save({\"module.weight\": torch.zeros(2, 3)}, \"ddp.pt\")' && "
                "torch nn load $(torch nn linear 3 2) ddp.pt --strip module. --partial"))
def nn_load(ctx, model, file, key=None, strip=None, map=None, partial=False, trust=None):  # noqa: A002 (--map)
    """Load a checkpoint's state_dict into the model and print the diff: loaded, missing, unexpected,
    shape-mismatched. Reads .safetensors, .pt/.pth/.ckpt/.bin with weights_only (--key picks the state dict
    inside, as Lightning's "state_dict"; --trust NAME,… allows classes a refusal names, never a function), a
    .pt2's weights (torch.export), and a Hugging Face sharded folder one shard at a time. --strip PREFIX,… and --map OLD=NEW,…
    rename the file's keys. Strict and atomic: any difference refuses with the diff and changes nothing;
    --partial loads what fits. A torchsh .safetensors (nn save, a checkpoint: its model part) brings back what
    the model's data stands for."""
    own = _torchsh_metadata(statedicts.parts(file))
    select = checkpoint.model_part if own.get("format") == checkpoint.FORMAT else dict
    loaded = Loaded(stateload.load_file(model, file, key, strip, map, partial, trust, select))
    kept = cards.from_stored(own) or _sidecar_card(file)
    cards.attach(model, kept)
    if kept:
        loaded[cards.STORED_KEY] = kept
    return loaded


def sidecar_path(file):
    """Where a .pt's card lives: beside it, FILE.card.json."""
    return file + ".card.json"


def _write_sidecar(file, card):
    path = sidecar_path(file)
    if card:
        text = json.dumps({cards.STORED_KEY: card}, indent=1, allow_nan=False).encode() + b"\n"
        fileio.atomic_write_bytes(path, text)
    elif os.path.lexists(path):
        fileio.regular_file(path)  # never follow a link another user planted
        os.unlink(path)


def _sidecar_card(file):
    """The card beside a .pt (FILE.card.json), or {}: a regular file of ours, JSON of a card."""
    path = sidecar_path(file)
    if not file.endswith((".pt", ".pth")) or not os.path.lexists(path):
        return {}
    fileio.regular_file(path)
    try:
        with open(path, "rb") as f:
            return cards.from_stored(json.loads(f.read(1 << 24)))
    except (OSError, ValueError) as e:
        raise TorchshError("file_error", "%s: not a model card (%s)" % (path, e),
                           "remove it, or save the model again with `torch nn save`") from None


def _torchsh_metadata(parts):
    """What torchsh wrote in a single .safetensors file's metadata ({} for anything else)."""
    if len(parts) != 1 or not parts[0].endswith(".safetensors"):
        return {}
    return headers.torchsh_metadata(headers.inspect(parts[0])["metadata"])


@verb("nn.jit_load(Path file) -> Module", category="nn",
      no_form="a TorchScript module holds code, not a constructor to write",
      examples=("python -c 'import torch; "
                'torch.jit.script(torch.nn.Linear(2, 1)).save("lin.ts")\' && torch nn jit_load lin.ts',),
      read_only=True)
def jit_load(ctx, file):
    """Load a TorchScript model saved from Python (torch.jit.save); runs with `torch forward`.

    TorchScript archives hold TorchScript code and tensors; torch.jit.load runs no Python pickle code.
    """
    fileio.regular_file(file)
    try:
        return torch.jit.load(file, map_location=ctx.device or "cpu")
    except (RuntimeError, ValueError) as e:
        raise TorchshError("file_error", "cannot load %s as TorchScript: %s" % (file, str(e).split("\n")[0])) from None
