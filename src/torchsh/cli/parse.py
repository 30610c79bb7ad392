"""argv words -> positional tokens and flags, using the op's flag kinds. Pure.

`-` and `_` fold in flag names; `--flag value`, `--flag=value`, and bare `--flag` for booleans
(followed optionally by true/false). `--` ends flags: the rest is one Argv (block forms).
"""
from dataclasses import dataclass, field

from torchsh.cli import tokens
from torchsh.errors import TorchshError

GLOBAL_FLAGS = {"no_grad": "bool", "inference_mode": "bool", "json": "bool", "help": "bool"}


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
        if w == "--":
            rest = words[i + 1:]
            break
        if w.startswith("--") and len(w) > 2:
            name, eq, value = w[2:].partition("=")
            name = name.replace("-", "_")
            spec = flag_specs.get(name)
            kind = spec.kind if spec else GLOBAL_FLAGS.get(name)
            if kind is None:
                raise TorchshError("unknown_flag", "unknown flag --%s" % name, _valid_flags(op, flag_specs))
            if eq:
                tok = tokens.from_word(value)
            elif kind == "bool":
                nxt = words[i + 1] if i + 1 < len(words) else None
                if nxt in ("true", "false", "True", "False", "1", "0"):
                    tok = tokens.from_word(nxt)
                    tok = tokens.Token("bool", tok.value in (True, 1), nxt)
                    i += 1
                else:
                    tok = tokens.Token("bool", True, "--" + name)
            else:
                if i + 1 >= len(words):
                    raise TorchshError("usage", "--%s needs a value" % name, op.usage())
                i += 1
                tok = tokens.from_word(words[i])
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


def _valid_flags(op, flag_specs):
    names = sorted("--" + n for n in flag_specs) + ["--no_grad", "--json", "--help"]
    return "valid flags for %s: %s" % (op.name, " ".join(names))
