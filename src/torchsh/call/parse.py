"""argv words -> positional tokens and flags, using the op's flag kinds. Pure.

`-` and `_` fold in flag names; `--flag value`, `--flag=value`, and bare `--flag` for booleans
(followed optionally by true/false). `-h` is `--help`. `--` ends flags: the rest is one Argv (block
forms). A lone `-` where a handle goes means "one handle from stdin here": a `stdin` token numbered
in argv order, which put_stdin replaces with the line the client read for it. A positional word whose every
line is a handle is those handles (zsh's unsplit `$b`).
"""
from dataclasses import dataclass, field

from torchsh.call import tokens
from torchsh.errors import TorchshError
from torchsh.registry.handles import looks_like_handle
from torchsh.table.aliases import flag_alias
from torchsh.table.kinds import LIST_FLAG_KINDS, STDIN_KINDS
from torchsh.text import suggest

# `--name NAME`: the object the command makes gets the name (Context.naming; only ops that make one), and
# `--ttl 30m` with it, the name's TTL. An op's own flag of the same name wins (`torch name H @n --ttl 30m`)
GLOBAL_FLAGS = {"no_grad": "bool", "inference_mode": "bool", "json": "bool", "help": "bool", "name": "str",
                "ttl": "str"}
STDIN_WORD = "-"


@dataclass
class Parsed:
    positionals: list
    flags: dict                  # name -> Token
    globals: dict = field(default_factory=dict)   # no_grad/inference_mode/json/help -> bool; name -> its text
    argv_rest: list = None       # words after `--`, or None


def split_argv(op, words, fixed=None):
    flag_specs = op.flags()
    positionals, flags, glob, rest = [], {}, {}, None
    marks = _StdinMarks()
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-q" and "quiet" in flag_specs:  # docker's -q (`torch tensors -q`: handles only)
            w = "--quiet"
        if w == "-f" and "follow" in flag_specs:  # tail's -f (`torch job logs J -f`)
            w = "--follow"
        if w == "--":
            rest = words[i + 1:]
            break
        if w == "-h":
            glob["help"] = True
            i += 1
            continue
        if w.startswith("--") and len(w) > 2:
            name, eq, value = w[2:].partition("=")
            name = name.replace("-", "_")
            spec = flag_specs.get(name)
            renamed = None if spec else flag_alias(op.name, name)  # NuTorch's `topk --smallest`
            if renamed:
                name, spec = renamed[0], flag_specs.get(renamed[0])
            kind = spec.kind if spec else GLOBAL_FLAGS.get(name)
            if kind is None:
                raise TorchshError("unknown_flag", "unknown flag --%s" % name, _valid_flags(op, flag_specs, name))
            tok, i = _flag_value(op, name, kind, words, i, value if eq else None)
            if renamed and renamed[1]:
                tok = tokens.from_json(renamed[1].get(tok.value, tok.value), tok.text)
            if spec is None:
                glob[name] = tok.text if kind == "str" else bool(tok.value)
            elif name in flags and name in op.repeatable:  # one value per occurrence
                flags[name] = (flags[name] if isinstance(flags[name], list) else [flags[name]]) + [tok]
            else:
                flags[name] = marks.mark(tok) if spec.kind in STDIN_KINDS else tok
        else:
            positionals += [marks.mark(tok) for tok in _positional_tokens(w)]
        i += 1
    for name, value in (fixed or {}).items():
        flags.setdefault(name, tokens.from_json(value))
    return Parsed(positionals, flags, glob, rest)


def _positional_tokens(word):
    """A positional word's tokens: one, or the handles of a word whose every line is a handle. zsh does not
    split an unquoted variable, so `b=$(torch data next $L); torch train_step $m $o $b` passes data next's two
    handle lines as one word, where bash passes two."""
    if "\n" in word.strip():
        lines = [line.strip() for line in word.split("\n") if line.strip()]
        if all(looks_like_handle(line) for line in lines):
            return [tokens.Token("handle", line, line) for line in lines]
    return [tokens.from_word(word)]


class _StdinMarks:
    """Numbers each lone `-` in a handle position (a positional, a handle flag) in argv order."""

    def __init__(self):
        self.count = 0

    def mark(self, tok):
        if isinstance(tok, list):
            return [self.mark(t) for t in tok]
        if tok.cls == "str" and tok.value.strip() == STDIN_WORD:
            self.count += 1
            return tokens.Token("stdin", self.count - 1, tok.text)
        return tok


def named(positionals, flags, lookup):
    """Positionals and flags with each `@name` as a token of the handle it names now (tokens.named)."""
    return [tokens.named(t, lookup) for t in positionals], {k: tokens.named(v, lookup) for k, v in flags.items()}


def stdin_marks(parsed):
    """How many `-` the command line holds."""
    toks = parsed.positionals + [t for v in parsed.flags.values() for t in (v if isinstance(v, list) else [v])]
    return sum(1 for t in toks if t.cls == "stdin")


def put_stdin(parsed, lines, flags):
    """Positionals and flags with each `-` replaced by its stdin line (lines[n] for the n-th `-`)."""
    def put(tok):
        return tokens.from_word(lines[tok.value]) if tok.cls == "stdin" else tok
    flags = {k: [put(t) for t in v] if isinstance(v, list) else put(v) for k, v in flags.items()}
    return [put(t) for t in parsed.positionals], flags


def _flag_value(op, name, kind, words, i, inline):
    """The token of flag `name` at words[i] (inline: the text after `=`) and the index of its last word."""
    if kind in LIST_FLAG_KINDS:  # Tensor[] as a flag, --inputs A B C: the words up to the next flag
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


def _valid_flags(op, flag_specs, name=None):
    """The hint of an unknown flag: the close one first (`--keepdims`: did you mean --keepdim?), then them all."""
    names = sorted("--" + n for n in flag_specs) + ["--no_grad", "--inference_mode", "--json", "--help", "--name",
                                                    "--ttl", "-h"]
    close = suggest.flag(name, list(flag_specs) + list(GLOBAL_FLAGS)) if name else None
    return "%svalid flags for %s: %s" % (close + " " if close else "", op.name, " ".join(names))
