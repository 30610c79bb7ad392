"""`torch __complete -- WORDS…`: what TAB offers after `torch WORDS…` (the last word is being typed).

One answer for bash, zsh, fish and Nushell (cobra's pattern): the scripts stay a dozen lines and the
daemon, which holds the op table and the objects, decides. Op names and namespace words (`linalg`,
`nn`, `optim`, `sched` kinds are rows), the flags of the op being typed, values for the flag before
the cursor (dtypes, devices, booleans, loss and metric names, handles of the flag's kind), and for a
positional slot the handles of that slot's kind (`torch forward <TAB>`: models; then tensors).

A slot with a completion of its own (SLOT_VALUES: `torch lm open <TAB>` lists the model folders in the
caller's cwd, shells/folders.py) answers before its kind does.

Lines are `candidate<TAB>description`; a single line `:files` asks the shell for file names. torch.nu's
completer sends its command line as typed (`--line`); nu_words finds the words of the `torch` call in it.
"""
import os

from torchsh.call.parse import split_argv
from torchsh.shells import folders
from torchsh.table.kinds import KINDS
from torchsh.vocab import DTYPES, LAYOUTS, MEMORY_FORMATS, dtype_name

FILES = folders.FILES
GLOBAL_FLAGS = {"--no_grad": "run without recording gradients", "--inference_mode": "run in inference mode",
                "--json": "print results as JSON", "--help": "usage, arguments and PyTorch's docs",
                "--name": "name the object it makes (@NAME)", "--ttl": "with --name: the name expires then (30m)"}
DEVICES = ("cpu", "cuda", "cuda:0", "cuda:1", "mps", "meta")
# A kind row's completion source (table/kinds.py: ArgKind.complete) -> its candidates
_SOURCES = {"dtypes": [(d, "dtype") for d in DTYPES], "devices": [(d, "device") for d in DEVICES],
            "bools": [("true", ""), ("false", "")], "layouts": [(x, "layout") for x in LAYOUTS],
            "memory_formats": [(x, "memory format") for x in MEMORY_FORMATS]}


def _losses():
    from torchsh.train.loss.functions import loss_names
    return [(n, "torch.nn.functional.%s" % n) for n in loss_names()]


def _metrics():
    from torchsh.train.metrics.epoch import METRICS
    return [(n, "metric") for n in METRICS]


def _autocasts():
    from torchsh.train.plan import AUTOCAST
    return [(n, "autocast to %s" % dtype_name(d)) for n, d in AUTOCAST.items()]


# str flags whose value names one of a set (train_step, fit): the flag -> its candidates
NAMED_VALUES = {"loss": _losses, "metrics": _metrics, "autocast": _autocasts}
def _model_folders(cur, cwd, census, rest):
    return folders.model_folders(cur, cwd)


def _adapters(cur, cwd, census, rest):
    """`torch lm adapter use LM <TAB>`: none, the names of LM's adapters, and the adapter handles held."""
    model = next((r for r in census if rest and r["handle"] == rest[0]), {})
    found = [("none", "the base model alone")] + [(n, "an adapter of %s" % rest[0]) for n in model.get("adapters", ())]
    found += [(r["handle"], describe(r)) for r in census if r["kind"] == "nn" and r.get("type") == "Adapter"]
    return [c for c in found if c[0].startswith(cur)]


# (op, argument) -> its candidates from (word typed, the caller's cwd or None, the census, the words before):
# slots whose words are more than their kind says (a folder that holds a model; an adapter's name)
SLOT_VALUES = {("lm.open", "folder"): _model_folders, ("lm.adapter.use", "adapter"): _adapters}


def candidates(table, census, words, cwd=None):
    """[(candidate, description)] or [(FILES, "")] for the words after `torch` (the last one partial). cwd: the
    caller's folder when this daemon sees the caller's files (a slot of SLOT_VALUES lists them), else None."""
    done, cur = list(words[:-1]), (words[-1] if words else "")
    op, used = resolve(table, done)
    if op is None:
        return names(table, done, cur)
    rest = done[used:]
    if cur.startswith("-"):
        return flags(op, cur)
    prev = rest[-1] if rest else ""
    if prev.startswith("--") and "=" not in prev:
        name = prev[2:].replace("-", "_")
        spec = op.flags().get(name)
        if (op.name, name) in SLOT_VALUES:
            return SLOT_VALUES[op.name, name](cur, cwd, census, rest[:-1])
        if spec is not None and spec.kind != "bool":
            return [c for c in NAMED_VALUES[name]() if c[0].startswith(cur)] if name in NAMED_VALUES \
                else values(spec.kind, census, cur)
    out = names(table, done, cur) if not rest else []   # `torch scope <TAB>`: begin, end too
    slots = slot_args(op, rest)
    own = [SLOT_VALUES[op.name, a.name] for a in slots if (op.name, a.name) in SLOT_VALUES]
    if own:
        return own[0](cur, cwd, census, rest)
    kinds = {a.kind for a in slots}
    if any(KINDS[kind].complete == "files" for kind in kinds):  # a file or folder slot: the shell lists them
        return [(FILES, "")]
    for kind in sorted(kinds):
        out += [c for c in values(kind, census, cur) if c not in out and c[0] != FILES]
    return out


def slot_kinds(op, rest):
    """The kinds the next positional word can be, over the overloads: after `torch forward` a model,
    after `torch forward M` a tensor, after `torch cat A` another tensor."""
    return {a.kind for a in slot_args(op, rest)}


def slot_args(op, rest):
    """The arguments (ArgSpecs) the next positional word can fill, over the overloads. The words typed so far
    are split as the daemon's parser does (a flag takes its value); words it refuses count one each."""
    try:
        n = len(split_argv(op, list(rest)).positionals)
    except Exception:  # noqa: BLE001 - an unknown flag while typing: count the words that are no flags
        n = sum(1 for w in rest if not w.startswith("--"))
    args = []
    for ov in op.overloads:
        slots = [a for a in ov.args if not a.keyword_only and a.kind != "argv"]
        args += [slots[n]] if n < len(slots) else []
        # `torch cat A B <TAB>`: a list slot at or before the cursor takes every word up to it
        args += [a for a in slots[:n + 1] if KINDS[a.kind].variadic]
    return args


def resolve(table, done):
    """(OpSpec, words it took) for the longest leading words that name an op, else (None, 0)."""
    for n in range(len(done), 0, -1):
        name = ".".join(done[:n])
        name = table.word_aliases.get(name, name) if hasattr(table, "word_aliases") else name
        if name in table.ops and not name.startswith("_"):
            return table.ops[name], n
    if done:
        try:
            return table.lookup(done[0])[0], 1
        except Exception:  # unknown or ambiguous: nothing to complete from
            return None, 0
    return None, 0


def names(table, done, cur):
    """Next words of op names after `done` (op names, namespaces, nn/optim/sched kinds)."""
    prefix = "".join(w + "." for w in done)
    found = {}
    for name, op in table.ops.items():
        if name.startswith(prefix) and not name.startswith("_"):
            word = name[len(prefix):].split(".")[0]
            if word.startswith(cur) and word not in found:
                found[word] = op.summary if name == prefix + word else "namespace: torch %s%s …" % (
                    " ".join(done) + " " if done else "", word)
    if not done:
        for short, full in table.bare.items():
            if short.startswith(cur) and len(full) == 1 and short not in found:
                found[short] = table.ops[full[0]].summary
        for alias, (target, _) in table.aliases.items():
            if alias.startswith(cur) and alias not in found:
                found[alias] = "alias of %s" % target
    return sorted(found.items())


def flags(op, cur):
    out = []
    for name, a in op.flags().items():
        if a.kind != "argv" and ("--" + name).startswith(cur):
            out.append(("--" + name, a.type_text or a.kind))
    out += [(f, d) for f, d in GLOBAL_FLAGS.items() if f.startswith(cur)]
    return out


def values(kind, census, cur):
    row = KINDS.get(kind)
    source = row.complete if row else ""
    if source == "files":
        return [(FILES, "")]
    if source == "handles":  # held handles of the row's handle kind (tensor://), or of any kind
        choices = handles(census, row.handle or None)
    else:
        choices = _SOURCES.get(source, [])
    return [c for c in choices if c[0].startswith(cur)]


def handles(census, prefix=None):
    """Held handles (all kinds, or one handle prefix) with what they hold."""
    return [(row["handle"], describe(row)) for row in census
            if prefix is None or row["handle"].startswith(prefix + "://")]


def describe(row):
    """A census row in a few words: `tensor [100,1] float32`, `nn Sequential 3 layers`, `optim AdamW lr=0.001`."""
    words = [row["kind"]]
    if "dtype" in row and "type" not in row:  # a tensor (an lm has a dtype too, and its class as type)
        shape = row.get("shape")
        words += ["[%s]" % ",".join(map(str, shape)) if shape is not None else "[uninitialized]", row.get("dtype", "?")]
        words += [row["device"]] if row.get("device", "cpu") != "cpu" else []
        words += ["requires_grad"] if row.get("requires_grad") else []
    else:
        words.append(str(row.get("type", "")))
    for field, unit in _COUNTS:
        if row.get(field):
            words.append("%s %s" % (row[field], unit))
            break
    if row.get("folder"):  # an lm: the folder it was opened from, and the adapter it generates with
        words.append(os.path.basename(os.path.normpath(row["folder"])))
    if row.get("active"):
        words.append("adapter %s" % row["active"])
    if row.get("lr") is not None:
        words.append("lr=%g" % row["lr"])
    if row.get("state"):
        words.append(row["state"])
    return " ".join(w for w in words if w)


# what a row counts, first found: a model's child layers, else its parameters; a dataset's samples, a loader's batches
_COUNTS = (("layers", "layers"), ("parameters", "parameters"), ("length", "samples"), ("batches", "batches"))


def nu_words(line):
    """The words after `torch` of the command being typed at the end of a Nushell line, or None when
    that is no `torch` command: an open bracket starts a command, `|`, `;` and a new line end the one
    before, and a bracketed or quoted word is one word (`torch add (torch ones [2]) `). The last word is
    the one being typed ("" after a space)."""
    start, outer, quote = 0, [], None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'`":
            quote = c
        elif c in "([{":
            outer.append(start)
            start = i + 1
        elif c in ")]}" and outer:
            start = outer.pop()
        elif c in "|;\n":
            start = i + 1
    words = _split_top(line[start:])
    if not line or line[-1].isspace():
        words.append("")
    return words[1:] if words and words[0] == "torch" else None


def _split_top(text):
    """Words at nesting depth 0 (brackets and quotes kept inside their word)."""
    words, word, depth, quote = [], "", 0, None
    for c in text:
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
        elif c.isspace() and depth == 0:
            if word:
                words.append(word)
            word = ""
            continue
        word += c
    return words + ([word] if word else [])


def lines(pairs):
    """The verb's output: `candidate<TAB>description` per line."""
    return "".join("%s\t%s\n" % (c, " ".join(str(d).split())) if d else "%s\n" % c for c, d in pairs)
