"""argv words -> positional tokens and flags, using the op's flag kinds. Pure.

`-` and `_` fold in flag names; `--flag value`, `--flag=value`, and bare `--flag` for booleans
(followed optionally by true/false). `--` ends flags: the rest is one Argv (block forms).
"""
from dataclasses import dataclass, field

from torchsh.cli import tokens
from torchsh.errors import TorchshError
from torchsh.table.aliases import flag_alias

GLOBAL_FLAGS = {"no_grad": "bool", "inference_mode": "bool", "json": "bool", "help": "bool"}
LIST_FLAG_KINDS = ("tensors", "handles", "modules")  # Tensor[] as a flag takes several words


@dataclass
class Parsed:
    positionals: list
    flags: dict                  # name -> Token
    globals: dict = field(default_factory=dict)   # no_grad/inference_mode/json/help -> bool
    argv_rest: list = None       # words after `--`, or None


def split_argv(op, words, fixed=None):
    flag_specs = op.flags()
    positionals, flags, glob, rest = [], {}, {}, None
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-q" and "quiet" in flag_specs:  # docker's -q (`torch tensors -q`: handles only)
            w = "--quiet"
        if w == "--":
            rest = words[i + 1:]
            break
        if w.startswith("--") and len(w) > 2:
            name, eq, value = w[2:].partition("=")
            name = name.replace("-", "_")
            spec = flag_specs.get(name)
            renamed = None if spec else flag_alias(op.name, name)  # NuTorch's `topk --smallest`
            if renamed:
                name, spec = renamed[0], flag_specs.get(renamed[0])
            kind = spec.kind if spec else GLOBAL_FLAGS.get(name)
            if kind is None:
                raise TorchshError("unknown_flag", "unknown flag --%s" % name, _valid_flags(op, flag_specs))
            tok, i = _flag_value(op, name, kind, words, i, value if eq else None)
            if renamed and renamed[1]:
                tok = tokens.from_json(renamed[1].get(tok.value, tok.value), tok.text)
            if spec is None:
                glob[name] = bool(tok.value)
            else:
                flags[name] = tok
        else:
            positionals.append(tokens.from_word(w))
        i += 1
    for name, value in (fixed or {}).items():
        flags.setdefault(name, tokens.from_json(value))
    return Parsed(positionals, flags, glob, rest)


def _flag_value(op, name, kind, words, i, inline):
    """The token of flag `name` at words[i] (inline: the text after `=`) and the index of its last word."""
    if kind in LIST_FLAG_KINDS:  # --inputs A B C: the words up to the next flag
        return _list_flag(op, name, words, i, inline)
    if inline is not None:
        return tokens.from_word(inline), i
    nxt = words[i + 1] if i + 1 < len(words) else None
    if kind == "bool":  # bare --keepdim means true; an explicit true/false/1/0 may follow
        if nxt in ("true", "false", "True", "False", "1", "0"):
            return tokens.Token("bool", nxt in ("true", "True", "1"), nxt), i + 1
        return tokens.Token("bool", True, "--" + name), i
    if nxt is None:
        raise TorchshError("usage", "--%s needs a value" % name, op.usage())
    return tokens.from_word(nxt), i + 1


def _list_flag(op, name, words, i, inline):
    """The tokens of a handle-list flag and the index of its last word."""
    if inline is not None:
        return [tokens.from_word(inline)], i
    toks = []
    while i + 1 < len(words) and not words[i + 1].startswith("--"):
        i += 1
        toks.append(tokens.from_word(words[i]))
    if not toks:
        raise TorchshError("usage", "--%s needs at least one value" % name, op.usage())
    return toks, i


def _valid_flags(op, flag_specs):
    names = sorted("--" + n for n in flag_specs) + ["--no_grad", "--inference_mode", "--json", "--help"]
    return "valid flags for %s: %s" % (op.name, " ".join(names))
