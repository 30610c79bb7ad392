"""What a model folder must hold before anything in it is read: config.json, weights only as *.safetensors, no
code of its own. A folder of pickled weights (pytorch_model.bin, *.pt) is refused, as `model inspect` refuses to
unpickle; a config that names its own Python classes (auto_map: trust_remote_code) is refused, since running a
download's code is what a model folder must never do here. The weights' bytes come from the safetensors headers
(formats/headers.py), so the memory budget admits a model before one tensor is read."""
import json
import os
import stat

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import headers
from torchsh.vocab import DTYPES

PICKLED = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
CONFIG = "config.json"
MAX_CONFIG_BYTES = 4 << 20


def check(folder):
    """(config dict, [safetensors files], stored bytes) of a model folder, or a refusal that says why."""
    try:
        st = os.stat(folder)
    except OSError as e:
        raise fileio.file_error(folder, "open", e) from None
    if not stat.S_ISDIR(st.st_mode):
        raise bad_argument("%s is not a folder" % folder, "torch lm open takes a model folder: config.json, "
                           "*.safetensors and the tokenizer's files (as save_pretrained writes them)")
    names = sorted(os.listdir(folder))
    if CONFIG not in names:
        raise bad_argument("%s has no config.json" % folder, "a Hugging Face model folder holds config.json, "
                           "*.safetensors and tokenizer files (model.save_pretrained and tokenizer.save_pretrained)")
    config = _config(os.path.join(folder, CONFIG))
    weights = [os.path.join(folder, n) for n in names if n.endswith(".safetensors")]
    pickled = [n for n in names if n.endswith(PICKLED)]
    if not weights:
        raise TorchshError("file_error", "%s has %s: pickled weights, which torchsh never loads (unpickling "
                           "runs code)" % (folder, ", ".join(pickled) or "no *.safetensors weights"),
                           "convert them once where you trust the file: python -c \"from transformers import "
                           "AutoModelForCausalLM as M; M.from_pretrained('DIR').save_pretrained('DIR2')\" writes "
                           "safetensors")
    if config.get("auto_map"):
        raise TorchshError("file_error", "%s's config.json names its own Python code (auto_map: %s): "
                           "trust_remote_code is never set" % (folder, ", ".join(sorted(config["auto_map"]))),
                           "use an architecture transformers ships (its config's model_type)")
    return config, weights, sum(_stored_bytes(w) for w in weights)


def _config(path):
    size = fileio.regular_file(path).st_size
    if size > MAX_CONFIG_BYTES:
        raise bad_argument("%s is %d bytes: not a model config" % (path, size))
    try:
        with open(path, "rb") as f:
            config = json.loads(f.read())
    except (OSError, ValueError) as e:
        raise fileio.file_error(path, "read", e) from None
    if not isinstance(config, dict):
        raise bad_argument("%s is not a JSON object" % path)
    return config


def _stored_bytes(path):
    """The bytes of the tensors one safetensors file holds, from its header."""
    found = headers.inspect(path)
    return sum(t["bytes"] for t in found["tensors"])


def weights_bytes(stored, stored_dtype, dtype_bytes):
    """The bytes the weights take once loaded as a dtype of dtype_bytes (None: as stored)."""
    if dtype_bytes is None or not stored_dtype:
        return stored
    stored_as = DTYPES.get(stored_dtype)
    return stored * dtype_bytes // (stored_as.itemsize if stored_as is not None else dtype_bytes)


def stored_dtype(weights):
    """The dtype most of the weights are stored in (PyTorch's name: float32, bfloat16), from the first file."""
    found = headers.inspect(weights[0])["tensors"] if weights else []
    counts = {}
    for t in found:
        counts[t["dtype"]] = counts.get(t["dtype"], 0) + t["bytes"]
    return max(counts, key=counts.get) if counts else None
