"""`torch __complete -- WORDS…`: what TAB offers after `torch WORDS…` (the last word is being typed).

One answer for bash, zsh and fish (cobra's pattern): the scripts stay a dozen lines and the daemon,
which holds the op table and the objects, decides. Op names and namespace words (`linalg`, `nn`,
`optim`, `sched` kinds are rows), the flags of the op being typed, values for the flag before the
cursor (dtypes, devices, booleans, handles by kind), and the handles held for positional slots.

Lines are `candidate<TAB>description`; a single line `:files` asks the shell for file names.
"""
from torchsh.table.kinds import KINDS
from torchsh.vocab import DTYPES, LAYOUTS, MEMORY_FORMATS

FILES = ":files"
GLOBAL_FLAGS = {"--no_grad": "run without recording gradients", "--inference_mode": "run in inference mode",
                "--json": "print results as JSON", "--help": "usage, arguments and PyTorch's docs"}
DEVICES = ("cpu", "cuda", "cuda:0", "cuda:1", "mps", "meta")
# A kind row's completion source (table/kinds.py: ArgKind.complete) -> its candidates
_SOURCES = {"dtypes": [(d, "dtype") for d in DTYPES], "devices": [(d, "device") for d in DEVICES],
            "bools": [("true", ""), ("false", "")], "layouts": [(x, "layout") for x in LAYOUTS],
            "memory_formats": [(x, "memory format") for x in MEMORY_FORMATS]}


def candidates(table, census, words):
    """[(candidate, description)] or [(FILES, "")] for the words after `torch` (the last one partial)."""
    done, cur = list(words[:-1]), (words[-1] if words else "")
    op, used = resolve(table, done)
    if op is None:
        return names(table, done, cur)
    rest = done[used:]
    if cur.startswith("-"):
        return flags(op, cur)
    prev = rest[-1] if rest else ""
    if prev.startswith("--") and "=" not in prev:
        spec = op.flags().get(prev[2:].replace("-", "_"))
        if spec is not None and spec.kind != "bool":
            return values(spec.kind, census, cur)
    out = names(table, done, cur) if not rest else []   # `torch scope <TAB>`: begin, end too
    kinds = {a.kind for ov in op.overloads for a in ov.args if not a.keyword_only}
    if "path" in kinds:
        return [(FILES, "")]
    for kind in sorted(kinds):
        out += [c for c in values(kind, census, cur) if c not in out and c[0] != FILES]
    return out


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
    out = []
    for row in census:
        h = row["handle"]
        if prefix is None or h.startswith(prefix + "://"):
            what = "%s %s" % (row.get("dtype", ""), row.get("shape", "")) if "dtype" in row else row.get("type", "")
            out.append((h, str(what).strip() or row.get("kind", "")))
    return out


def lines(pairs):
    """The verb's output: `candidate<TAB>description` per line."""
    return "".join("%s\t%s\n" % (c, " ".join(str(d).split())) if d else "%s\n" % c for c, d in pairs)
