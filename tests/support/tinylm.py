"""Tiny language model folders for the `torch lm` tests: made once per test session from a config, with a
tokenizer trained on the spot (torchsh.lm.tiny), so nothing is downloaded. folder(arch) gives the folder's
path (llama, qwen2 or gpt2); oracle(arch) opens the same folder in this process with transformers, the
reference every test compares with."""
import atexit
import os
import shutil
import tempfile

_made = {}
_root = []


def folder(arch="llama"):
    if arch not in _made:
        if not _root:
            _root.append(tempfile.mkdtemp(prefix="tsh-lm-"))
            atexit.register(shutil.rmtree, _root[0], True)
        from torchsh.lm import tiny
        _made[arch] = tiny.make(os.path.join(_root[0], arch), arch=arch)
    return _made[arch]


def oracle(arch="llama"):
    """(model, tokenizer) of folder(arch), loaded here by transformers as a user's script would."""
    from torchsh.lm import library
    tf = library.transformers()
    path = folder(arch)
    model = tf.AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    return model, tf.AutoTokenizer.from_pretrained(path, local_files_only=True)
