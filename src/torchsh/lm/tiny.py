"""A tiny language model folder made from a config, with a tokenizer trained here: what the tests, the docs'
examples and the bench open, since nothing may be downloaded. Its weights are random (seeded), so what it says
is noise; everything around it (tokenizing, generating, LoRA, serving) is the real path.

    python -m torchsh.lm.tiny DIR [--arch llama|qwen2|gpt2] [--seed 0] [--layers 2] [--hidden 64]

A folder once made is kept in the user's cache folder (cachefiles.folder(): ~/.cache/torchsh/tiny-lm/), named
by its options, this file's bytes and the versions of the libraries that wrote it, and copied from there the next
time (the docs' and the verbs' examples make one each: a copy skips importing transformers). The kept folder is
used only if it and each of its files are ours and not writable by others (trust.py), as every file torchsh
reads from a shared place.
"""
import argparse
import hashlib
import importlib.metadata
import os
import shutil
import tempfile

from torchsh import cachefiles, trust
from torchsh.lm import library

# A few sentences the byte-level BPE learns its merges from: enough for words to be a token or two.
CORPUS = ("the sky is blue because air scatters blue light more than red light",
          "why is the sky blue? the answer is rayleigh scattering of sunlight",
          "hello world, this is a tiny language model made for tests",
          "a model is trained with a loss, an optimizer and data in batches",
          "pytorch tensors live in a daemon and the shell passes their handles") * 4
SPECIAL = ("<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>")
# ChatML, as Qwen's tokenizers carry it: role lines between <|im_start|> and <|im_end|>
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
ARCHS = ("llama", "qwen2", "gpt2")


def make(folder, arch="llama", seed=0, layers=2, hidden=64, vocab_size=384):
    """Write a model folder (config.json, model.safetensors, generation_config.json, tokenizer files): a copy of
    the one kept in the cache when there is one of ours, else made here (and kept). A folder that holds anything
    else already is refused (its config.json and weights would be replaced); one that holds exactly this model,
    file for file and byte for byte, is left as it is, so making it twice is harmless (as `mkdir -p`)."""
    if os.path.isdir(folder) and os.listdir(folder):
        with tempfile.TemporaryDirectory() as made:
            _make_into(made, arch, seed, layers, hidden, vocab_size)
            if not _same_files(made, folder):
                raise FileExistsError("%s holds other files: a tiny model is made in a new or empty folder, "
                                      "or one that holds this very model" % folder)
        return folder
    _make_into(folder, arch, seed, layers, hidden, vocab_size)
    return folder


def _make_into(folder, arch, seed, layers, hidden, vocab_size):
    kept = _kept_folder(arch, seed, layers, hidden, vocab_size)
    if kept is not None and _trusted(kept):
        _copy(kept, folder)
        return
    _build(folder, arch, seed, layers, hidden, vocab_size)
    if kept is not None:
        _keep(folder, kept)


def _same_files(made, folder):
    """Whether FOLDER holds the files of MADE and nothing else, with the same bytes (no link followed)."""
    names = sorted(os.listdir(made))
    if sorted(os.listdir(folder)) != names:
        return False
    for name in names:
        theirs = os.path.join(folder, name)
        if os.path.islink(theirs) or not os.path.isfile(theirs):
            return False
        with open(os.path.join(made, name), "rb") as a, open(theirs, "rb") as b:
            if a.read() != b.read():
                return False
    return True


def _build(folder, arch, seed, layers, hidden, vocab_size):
    import torch
    tf = library.transformers()
    tokenizer = train_tokenizer(vocab_size)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL}
    config = _config(tf, arch, len(tokenizer), layers, hidden, ids)
    torch.manual_seed(seed)
    model = tf.AutoModelForCausalLM.from_config(config)
    model.generation_config.eos_token_id = [ids["</s>"], ids["<|im_end|>"]]
    model.generation_config.pad_token_id = ids["<pad>"]
    model.generation_config.do_sample = False
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def _kept_folder(arch, seed, layers, hidden, vocab_size):
    """Where a folder of these options is kept (None: the cache is off)."""
    where = cachefiles.folder()
    if where is None:
        return None
    with open(__file__, "rb") as f:
        source = hashlib.sha256(f.read()).hexdigest()[:12]
    versions = "-".join(_version(p) for p in ("torch", "transformers", "tokenizers", "safetensors"))
    key = hashlib.sha256(("%s|%s|%s" % (source, versions, (arch, seed, layers, hidden, vocab_size))).encode())
    return os.path.join(where, "tiny-lm", "%s-%s" % (arch, key.hexdigest()[:16]))


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _trusted(kept):
    """Whether the kept folder, its parents up to the cache folder, and each file in it are ours (no link)."""
    try:
        for path in (os.path.dirname(os.path.dirname(kept)), os.path.dirname(kept), kept):
            if trust.untrusted(path, trust.S_IFDIR):
                return False
        names = os.listdir(kept)
        return bool(names) and all(trust.untrusted(os.path.join(kept, n), trust.S_IFREG) is None for n in names)
    except OSError:
        return False


def _copy(kept, folder):
    os.makedirs(folder, exist_ok=True)
    for name in sorted(os.listdir(kept)):
        shutil.copyfile(os.path.join(kept, name), os.path.join(folder, name), follow_symlinks=False)


def _keep(folder, kept):
    """Keep a copy of FOLDER at KEPT, whole or not at all (made beside it, then renamed into place)."""
    parent = os.path.dirname(kept)
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
        if trust.untrusted(parent, trust.S_IFDIR):
            return
        staged = tempfile.mkdtemp(dir=parent, prefix=".making-")
    except OSError:
        return  # a read-only home: the next call makes it again
    try:
        for name in os.listdir(folder):
            shutil.copyfile(os.path.join(folder, name), os.path.join(staged, name), follow_symlinks=False)
        os.rename(staged, kept)
    except OSError:  # another process kept it first
        shutil.rmtree(staged, ignore_errors=True)


def train_tokenizer(vocab_size=384):
    """A byte-level BPE trained on CORPUS, wrapped as transformers' fast tokenizer with a chat template."""
    tk = library.tokenizers()
    tf = library.transformers()
    bpe = tk.Tokenizer(tk.models.BPE())
    bpe.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL),
                                     initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator(CORPUS, trainer)
    return tf.PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                      chat_template=CHAT_TEMPLATE)


def _config(tf, arch, vocab, layers, hidden, ids):
    common = dict(vocab_size=vocab, bos_token_id=ids["<s>"], eos_token_id=ids["</s>"], pad_token_id=ids["<pad>"],
                  tie_word_embeddings=False)
    if arch == "gpt2":
        return tf.GPT2Config(n_embd=hidden, n_layer=layers, n_head=4, n_positions=256, **common)
    cls = {"llama": tf.LlamaConfig, "qwen2": tf.Qwen2Config}[arch]
    return cls(hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=256, **common)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m torchsh.lm.tiny", description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--arch", choices=ARCHS, default="llama")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    args = parser.parse_args(argv)
    try:
        print(make(args.folder, args.arch, args.seed, args.layers, args.hidden))
    except FileExistsError as e:
        parser.exit(2, "%s: %s\n" % (parser.prog, e))


if __name__ == "__main__":
    main()
