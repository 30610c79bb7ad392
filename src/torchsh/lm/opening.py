"""`torch lm open DIR`: a local Hugging Face folder as a LanguageModel, checked first (folder.py), its weights
admitted by the memory budget from their headers, then loaded by transformers offline: safetensors only,
trust_remote_code never set, nothing fetched."""
import os

import torch

from torchsh.errors import TorchshError, bad_argument
from torchsh.lm import folder as folders, library
from torchsh.lm.model import LanguageModel
from torchsh.vocab import DTYPES as VOCAB_DTYPES

# --dtype: PyTorch's names, the short ones transformers' users type, and `auto` (as the folder stores them)
DTYPES = {"auto": None, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16,
          "float16": torch.float16, "half": torch.float16, "fp32": torch.float32, "float32": torch.float32,
          "float": torch.float32}


def open_folder(path, dtype=None, device=None, budget=None):
    """The model and tokenizer in folder PATH; dtype: a DTYPES name (default: as stored); budget: the
    daemon's memory budget, which admits the weights before they are read (host memory only)."""
    dtype = _dtype(dtype)
    path = os.path.abspath(path)
    config, weights, stored = folders.check(path)
    stored_dtype = folders.stored_dtype(weights)
    load_dtype = dtype or VOCAB_DTYPES.get(stored_dtype)
    if budget is not None and (device is None or device.type == "cpu"):
        need = folders.weights_bytes(stored, stored_dtype, load_dtype.itemsize if load_dtype else None)
        budget.admit_bytes(need, "%s's weights" % os.path.basename(path))
    tf = library.transformers()
    try:
        model = tf.AutoModelForCausalLM.from_pretrained(
            path, dtype=load_dtype or "auto", use_safetensors=True, trust_remote_code=False, local_files_only=True)
        tokenizer = tf.AutoTokenizer.from_pretrained(path, trust_remote_code=False, local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise TorchshError("file_error", "transformers cannot open %s: %s" % (path, str(e).split("\n")[0][:300]),
                           "the folder needs config.json, *.safetensors and a tokenizer (tokenizer.json), "
                           "as save_pretrained writes them") from None
    if device is not None:
        model.to(device)
    model.eval()
    return LanguageModel(model, tokenizer, path, config, stored_dtype)


def _dtype(name):
    if name is None:
        return None
    try:
        return DTYPES[name.lower()]
    except KeyError:
        raise bad_argument("--dtype %r is not a weights dtype" % name,
                           "one of %s" % ", ".join(sorted(DTYPES))) from None
