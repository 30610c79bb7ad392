"""Did-you-mean for the words a newcomer mistypes or brings from elsewhere: a flag's name, a dtype, a device.

difflib's close matches find typos (`--keepdims`, `flaot32`); the names other tools use for the same thing
(`gpu`, `fp16`) are no spelling distance away, so they are rows here. Pure: a hint's text, or None.
"""
import difflib

from torchsh.vocab import DTYPES

DEVICES = ("cpu", "cuda", "mps", "meta", "xpu")
# What other tools (and habits) call PyTorch's names: word -> PyTorch's word
SYNONYMS = {
    "dtype": {"fp32": "float32", "f32": "float32", "single": "float32", "fp64": "float64", "f64": "float64",
              "fp16": "float16", "f16": "float16", "bf16": "bfloat16", "i64": "int64", "i32": "int32",
              "i8": "int8", "u8": "uint8", "boolean": "bool", "float128": "float64"},
    "device": {"gpu": "cuda", "nvidia": "cuda", "cuda0": "cuda:0", "gpu0": "cuda:0", "metal": "mps",
               "apple": "mps", "host": "cpu"},
}


def close(word, words, n=3, cutoff=0.7):
    """The words of `words` closest to `word`, best first (case does not count)."""
    lowered = {w.lower(): w for w in words}
    return [lowered[w] for w in difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=cutoff)]


def value(kind, word):
    """"did you mean float32?" for a word a dtype or device slot could not read, or None."""
    if kind not in SYNONYMS or not isinstance(word, str):
        return None
    names = list(DTYPES) if kind == "dtype" else list(DEVICES)
    text = word.strip().lower()
    if kind == "dtype":
        text = text.replace("torch.", "")
    base, sep, index = text.partition(":")
    if base in names:  # a word that is right already (another word is the wrong one)
        return None
    synonym = SYNONYMS[kind].get(text) or SYNONYMS[kind].get(base)
    if synonym:
        found = [synonym + (sep + index if sep and ":" not in synonym else "")]
    else:
        found = [w + sep + index for w in close(base, names)]
    return "did you mean %s?" % " or ".join(found) if found else None


def flag(name, names):
    """"did you mean --keepdim?" for an unknown flag, or None."""
    found = close(name.replace("-", "_"), names, cutoff=0.75)
    return "did you mean %s?" % " or ".join("--" + f for f in found) if found else None
