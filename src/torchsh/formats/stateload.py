"""A checkpoint's state dict into a model, for `torch nn load` and `model open --weights`: renames, the diff,
strict or partial, atomic.

The file's keys are renamed first (--strip PREFIX drops a prefix: DataParallel's `module.`, Lightning's
`model.`; --map OLD=NEW renames a prefix), then compared with the model's state_dict: loaded, missing,
unexpected, shape-mismatched. Strict (the default) refuses any difference with the whole diff and changes
nothing; --partial loads the keys that fit and reports the rest. Either way the model changes in one
load_state_dict(strict=True) of its own state with the fitting tensors in place, after every check.
Files arrive one at a time (a sharded folder's shards): only the tensors the model takes are kept.
"""
import torch

from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import statedicts


class LoadDiff(dict):
    """What a load did (or would do): file, loaded (of the model's keys), missing, unexpected, mismatched."""

    def clean(self):
        return not (self["missing"] or self["unexpected"] or self["mismatched"])

    def summary(self):
        """The diff in one line, for a refusal: each list cut at a few names."""
        shown = [("missing", self["missing"]), ("unexpected", self["unexpected"]),
                 ("shape-mismatched", ["%s: file %s vs model %s" % (m["key"], m["file"], m["model"])
                                       for m in self["mismatched"]])]
        return ", ".join("%d %s [%s%s]" % (len(keys), what, ", ".join(keys[:5]), ", …" if len(keys) > 5 else "")
                         for what, keys in shown if keys)


def load_file(model, file, key=None, strip=None, renames=None, partial=False, trust=None, select=dict):
    """The LoadDiff of loading checkpoint FILE (a file or a sharded folder) into model, or a refusal.
    Safetensors are compared by their headers first, so a refusal reads no data. select(state) picks the
    model's part of each file's state (a torchsh checkpoint holds the optimizer's too)."""
    trusted, parts, rename = statedicts.trusted_globals(trust), statedicts.parts(file), renamer(strip, renames)
    if all(part.endswith(".safetensors") for part in parts):
        headers = (select(statedicts.shapes(part)) for part in parts)
        refuse_unless_it_fits(compare(model, headers, rename, file)[1], partial)
    chunks = (select(statedicts.read(part, key, trusted)) for part in parts)
    fitting, diff = compare(model, chunks, rename, file)
    return load(model, fitting, diff, partial)


def renamer(strip=None, renames=None):
    """key -> the model's name for it: each --strip prefix dropped (in order), then the first --map that fits."""
    pairs = []
    for spec in renames or ():
        old, eq, new = spec.partition("=")
        if not eq or not old:
            raise bad_argument("--map %r: write OLD=NEW (a key starting OLD starts NEW instead)" % spec)
        pairs.append((old, new))

    def rename(key):
        for prefix in strip or ():
            if key.startswith(prefix):
                key = key[len(prefix):]
        return next((new + key[len(old):] for old, new in pairs if key.startswith(old)), key)
    return rename


def compare(model, chunks, rename, file):
    """(the tensors that fit, keyed as the model names them; the LoadDiff). chunks: {key: tensor} dicts,
    read one at a time; what does not fit is dropped with its chunk."""
    own = model.state_dict()
    fitting, seen, unexpected, mismatched = {}, {}, [], []
    for chunk in chunks:
        for file_key, tensor in chunk.items():
            key = rename(file_key)
            if key in seen:
                raise bad_argument("keys %s and %s of %s are both %s after renaming" % (seen[key], file_key, file, key),
                                   "--strip and --map must leave each key a name of its own")
            seen[key] = file_key
            if key not in own:
                unexpected.append(key)
            elif tuple(tensor.shape) != tuple(own[key].shape):
                mismatched.append({"key": key, "file": list(tensor.shape), "model": list(own[key].shape)})
            else:
                fitting[key] = tensor
        chunk = tensor = None  # drop this file's tensors before the next is read: the memory of one shard
    missing = [k for k in own if k not in seen]
    return fitting, LoadDiff(file=file, loaded=len(fitting), of=len(own), missing=missing, unexpected=unexpected,
                             mismatched=mismatched)


def refuse_unless_it_fits(diff, partial):
    """Refuse with the diff: strict and any difference, or nothing fits at all."""
    hint = "nothing was loaded; --partial loads the keys that fit (%d), --strip PREFIX and --map OLD=NEW " \
           "rename the file's keys" % diff["loaded"]
    if not diff["loaded"] and diff["of"]:
        raise TorchshError("state_mismatch", "no key of %s fits the model: %s" % (diff["file"], diff.summary()), hint)
    if not partial and not diff.clean():
        raise TorchshError("state_mismatch", "%s does not fit the model: %s" % (diff["file"], diff.summary()), hint)


def load(model, fitting, diff, partial):
    """Refuse with the diff (refuse_unless_it_fits), or load what fits in one step."""
    refuse_unless_it_fits(diff, partial)
    state = model.state_dict()  # the live values: what does not load is copied onto itself
    state.update(fitting)
    with torch.no_grad():
        model.load_state_dict(state, strict=True)
    return diff
