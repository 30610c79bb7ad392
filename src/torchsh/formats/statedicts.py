"""State dicts as real checkpoints hold them, read for `torch nn load`; nothing is unpickled.

- a .safetensors file (stfile: read into memory of its own);
- a torch.save pickle (.pt .pth .ckpt .bin) through torch.load(weights_only=True): a plain state dict, or a
  dict around one (Lightning's .ckpt keeps it under "state_dict": `--key state_dict` picks it). A file whose
  pickle needs globals beyond weights_only is refused naming them (headers.inspect: PyTorch's static scan of
  the opcodes, which runs none); `--trust NAME,…` allows exactly those classes, resolved by import path,
  through torch.serialization.safe_globals: never a function, never a class that runs code as it is built
  (trusted.py). There is no weights_only=False;
- a torch.export archive (.pt2): the exported module's state dict, from its raw weights and their JSON
  (pt2weights.py: the archive's pickles are never opened but through weights_only);
- a TorchScript archive is refused (its weights live in TorchScript's own pickle): `torch nn jit_load`
  opens it as a model, whose weights `torch nn save` then writes;
- a Hugging Face sharded folder: its model.safetensors.index.json (or pytorch_model.bin.index.json) names
  the shards, which parts() lists so the caller reads one at a time (the memory of one shard, not all).
shapes() gives a .safetensors file's keys and shapes from its header, so a load that does not fit is
refused before any data is read.
"""
import json
import os

import torch

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import extensions, headers, pt2weights, ptfile, stfile
from torchsh.formats import trusted as trust_policy

INDEX_NAMES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
MAX_INDEX_BYTES = 64 << 20  # an index names each key once: tens of MiB would be millions of keys


def parts(path):
    """The files the checkpoint at path is made of: the file itself, or a sharded folder's shards."""
    if not os.path.isdir(path):
        return [path]
    for name in INDEX_NAMES:
        if os.path.exists(os.path.join(path, name)):
            return _shards(path, os.path.join(path, name))
    raise bad_argument("%s is a folder without %s" % (path, " or ".join(INDEX_NAMES)),
                       "name a checkpoint file, or a Hugging Face sharded folder")


def _shards(folder, index):
    """The shard files an index.json's weight_map names, each once, in the order it names them."""
    if fileio.regular_file(index).st_size > MAX_INDEX_BYTES:
        raise TorchshError("too_large", "%s is over %d MiB" % (index, MAX_INDEX_BYTES >> 20))
    try:
        with open(index) as f:
            names = list(dict.fromkeys(json.load(f)["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise fileio.file_error(index, "read", e) from None
    for name in names:  # a shard is a file in the folder itself: never a path that leaves it
        if not isinstance(name, str) or name in ("", ".", "..") or os.path.basename(name) != name:
            raise TorchshError("file_error", "%s names a shard %r outside its folder" % (index, name))
    return [os.path.join(folder, name) for name in names]


def shapes(path):
    """{name: a meta tensor of its shape} of a .safetensors file from its header alone: no data is read."""
    return {t["key"]: torch.empty(t["shape"], device="meta") for t in headers.inspect(path)["tensors"]}


def read(path, key=None, trusted=()):
    """{name: tensor} of one checkpoint file: a pickle by its extension (headers.PT_NAMES), else safetensors
    or a .pt2 (a file that is not one is a file_error); key picks the state dict inside a pickled dict."""
    if not path.endswith(".safetensors") and extensions.read(path, headers.is_torchscript):
        raise TorchshError("file_error", "%s is TorchScript (code and weights), not a state dict; nothing was loaded"
                           % path, "`torch nn jit_load FILE` opens it as a model; `torch nn save $(torch nn jit_load "
                           "FILE) weights.safetensors` writes its weights")
    if not path.endswith(headers.PT_NAMES):
        if key is not None:
            raise bad_argument("--key picks a state dict inside a pickle (%s); %s holds tensors by name"
                               % (" ".join(headers.PT_NAMES), os.path.basename(path)))
        if path.endswith(".pt2"):
            return extensions.read(path, pt2weights.read, trusted, _unsafe_globals)
        return stfile.read(path)[0]
    obj = extensions.read(path, ptfile.read_trusted, path, trusted, _unsafe_globals)
    if key is not None:
        if not isinstance(obj, dict) or key not in obj:
            raise TorchshError("file_error", "%s holds no key %r" % (path, key), _holds(obj))
        obj = obj[key]
    if isinstance(obj, torch.nn.Module):  # a whole-module pickle whose classes --trust allowed
        obj = obj.state_dict()
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise TorchshError("file_error", "%s holds %s, not a state_dict" % (path, type(obj).__name__), _holds(obj))
    return dict(obj)


def _holds(obj):
    """The hint for a pickle that is not a state dict itself: the keys --key could pick."""
    if not isinstance(obj, dict):
        return None
    dicts = [k for k, v in obj.items() if isinstance(v, dict)]
    return "it is a dict of %s; --key %s picks the state dict in it" % (
        ", ".join(map(str, list(obj)[:8])), dicts[0] if dicts else "NAME")


def _unsafe_globals(source):
    """The globals a pickle (a file's path, or a .pt2 member's bytes) needs beyond weights_only, by
    PyTorch's static scan of its opcodes (headers.inspect for a file: a pickle that is not a zip says so)."""
    if isinstance(source, str):
        return headers.inspect(source).get("globals_needed")
    return sorted(torch.serialization.get_unsafe_globals_in_checkpoint(source))


def trusted_globals(names):
    """The classes --trust names, each imported by its dotted path; bad_argument for a name that is no class,
    or one never trusted (formats/trusted.py: functions, and classes that run code as they are built)."""
    out = []
    for name in names or ():
        why = trust_policy.by_name(name)  # first, so that a module never trusted is never imported either
        found = trust_policy.resolve(name) if why is None else None
        if why is None and found is None:
            raise bad_argument("--trust %s: not a class importable by that dotted name" % name,
                               "name it as the refusal does, e.g. mypkg.models.MyNet; --trust allows "
                               + trust_policy.WHAT_CAN)
        why = why or trust_policy.refusal(found)
        if why:
            raise bad_argument("--trust %s: never trusted: %s" % (name, why), "--trust allows %s; a file that "
                               "needs it is no checkpoint: do not load it" % trust_policy.WHAT_CAN)
        out.append(found)
    return out
