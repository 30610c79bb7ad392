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


def endless(arch="llama"):
    """folder(arch) with a context of a million tokens and no end-of-sequence token: a generation that runs until
    it is stopped (Ctrl-C, `job stop`), for the tests that stop one."""
    import json
    key = arch + "-endless"
    if key not in _made:
        source = folder(arch)  # made first: it makes the session's folder too
        path = os.path.join(_root[0], key)
        shutil.copytree(source, path)
        for name, changes in (("config.json", dict(max_position_embeddings=1 << 20, eos_token_id=None)),
                              ("generation_config.json", dict(eos_token_id=None))):
            with open(os.path.join(path, name)) as f:
                config = json.load(f)
            with open(os.path.join(path, name), "w") as f:
                json.dump(dict(config, **changes), f)
        _made[key] = path
    return _made[key]
