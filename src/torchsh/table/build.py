"""Assemble the op table: PyTorch's ops (from_torch), hand-written verbs (verbs/), aliases.

Name resolution lives here: a full dotted name (`linalg.qr`), the same split into words
(`torch linalg qr`), a bare name when unambiguous (`gelu` -> nn.functional.gelu), an alias.
Verbs win over ops of the same name; each such shadowing is deliberate and listed by `torch ops`.
A group is every dotted prefix of row names (nn, nn.functional, optim, sched, daemon, linalg…):
`torch GROUP` alone or with -h/--help lists it, and an unknown word after a group names the group,
the nearest words in it and the other group that has the word (`torch nn sgd` -> `torch optim sgd`).
"""
import gc
import re
import time

from torchsh.errors import TorchshError
from torchsh.table import aliases
from torchsh.table.spec import OpSpec


class OpTable:
    def __init__(self, ops):
        self.ops = {}
        for op in ops:
            if op.name in self.ops and not op.verb:
                continue
            self.ops[op.name] = op
        self.bare = {}
        for name, op in self.ops.items():
            if "." in name and not op.words_only:  # `nn linear`, never a bare `linear`
                short = name.rsplit(".", 1)[1]
                if short in self.ops:
                    continue
                self.bare.setdefault(short, []).append(name)
        self.aliases = {k: v for k, v in _all_aliases().items() if v[0] in self.ops or v[0] in self.bare}
        for alias, (target, _) in self.aliases.items():  # `torch linalg.svd --help` lists `svd`
            op = self.ops.get(target) or self.ops[self.bare[target][0]]
            if alias not in op.aliases:
                op.aliases = tuple(op.aliases) + (alias,)
        self.max_words = max(n.count(".") for n in self.ops) + 1
        # dotted spellings that name a row too: nn.Linear for nn.linear, sched.cosine for sched.cosine_annealing_lr
        self.word_aliases = {a: name for name, op in self.ops.items() for a in op.word_aliases}
        self.groups = _groups(self.ops)

    def __len__(self):
        return len(self.ops)

    def lookup(self, name):
        """Return (OpSpec, fixed flags) for a name, or raise unknown_op/ambiguous_op."""
        if name in self.ops:
            return self.ops[name], {}
        alias = self.aliases.get(name)
        if alias:
            return self.lookup(alias[0])[0], dict(alias[1])
        found = self.bare.get(name)
        if found and len(found) == 1:
            return self.ops[found[0]], {}
        if found:
            raise TorchshError("ambiguous_op", "%r names several ops: %s" % (name, ", ".join(sorted(found))),
                               "type the full name")
        raise TorchshError("unknown_op", "no op named %r" % name, _suggest(name, self.ops))

    def resolve(self, argv):
        """Split argv into (OpSpec, fixed flags, rest): `nn save M F` -> op nn.save, rest [M, F]."""
        for words in range(min(self.max_words, len(argv)), 1, -1):
            candidate = ".".join(argv[:words])
            candidate = self.word_aliases.get(candidate, candidate)
            if candidate in self.ops:
                return self.ops[candidate], {}, argv[words:]
        group, rest = self._group_prefix(argv)
        if group is not None:
            found = self._in_group(group, rest)
            if found is not None:
                return found
        op, fixed = self.lookup(argv[0])
        return op, fixed, argv[1:]

    def _group_prefix(self, argv):
        """The longest group that argv starts with (`nn functional` before `nn`), and the words after it."""
        for words in range(min(self.max_words, len(argv)), 0, -1):
            name = ".".join(argv[:words])
            if name in self.groups:
                return name, argv[words:]
        return None, argv

    def _in_group(self, group, rest):
        """(group listing, {}, []) for `torch GROUP [-h|--help]`, unknown_op for `torch GROUP WORD` with no
        such WORD; None where the group word is itself a runnable op (`torch fft $t`, `torch scope -- CMD`)."""
        own = self._own_op(group)
        if rest in ([], ["-h"], ["--help"]) and (rest or own is None or _needs_command(own)):
            return group_op(self, group), {}, []
        if rest and _NAME_RE.match(rest[0]) and not (own is not None and _takes_a_word_first(own)):
            raise self.unknown_in_group(group, rest[0])
        if own is None:
            raise TorchshError("unknown_op", "`torch %s` needs a command before %r" % (group.replace(".", " "),
                               rest[0][:60]), "`torch %s --help` lists them" % group.replace(".", " "))
        return None

    def _own_op(self, group):
        try:
            return self.lookup(group)[0]
        except TorchshError:
            return None

    def members(self, group):
        """The next words under a group: {word: OpSpec or None (a sub-group)}."""
        out = {}
        for name in self.groups[group]:
            word = name[len(group) + 1:].split(".")[0]
            out[word] = self.ops.get(group + "." + word)
        return out

    def unknown_in_group(self, group, word):
        """unknown_op naming the group and the word, the nearest words of the group, and any other group
        (or top-level op) that has the word."""
        spoken = group.replace(".", " ")
        hints = []
        elsewhere = self.elsewhere(word, group)
        if elsewhere:
            hints.append("%r is %s" % (word, " or ".join("`torch %s`" % e for e in elsewhere)))
        shorts = [a.rsplit(".", 1)[1] for a in self.word_aliases if a.rsplit(".", 1)[0] == group and a.islower()]
        close = _close(word, list(self.members(group)) + shorts)  # `sched cosine` as well as cosine_annealing_lr
        if close:
            hints.append("nearest in %s: %s" % (spoken, ", ".join("`torch %s %s`" % (spoken, w) for w in close)))
        hints.append("`torch %s --help` lists its commands" % spoken)
        return TorchshError("unknown_op", "`torch %s` has no command %r" % (spoken, word[:60]), "; ".join(hints),
                            op=spoken)

    def elsewhere(self, word, group=None):
        """Where else `word` is a command: other groups first (`optim sgd`), then a top-level op (`mm`)."""
        out = {}  # the row found -> how to type it
        for spelling in dict.fromkeys((word, word.lower(), _snake(word))):
            for other in sorted(self.groups):
                name = self.word_aliases.get(other + "." + spelling, other + "." + spelling)
                if other != group and name in self.ops:
                    out.setdefault(name, "%s %s" % (other.replace(".", " "), spelling) if self.ops[name].verb else name)
            if "." not in spelling:
                try:
                    out.setdefault(self.lookup(spelling)[0].name, spelling)
                except TorchshError:
                    pass
        return list(out.values())[:3]

    def in_category(self, category=None):
        return [op for op in self.ops.values() if category in (None, op.category)]


_NAME_RE = re.compile(r"^[A-Za-z_][\w]*$")


def _groups(ops):
    """{group: [full names of the rows under it]} for every dotted prefix of a row name."""
    out = {}
    for name in ops:
        parts = name.split(".")
        for i in range(1, len(parts)):
            out.setdefault(".".join(parts[:i]), []).append(name)
    return out


def _needs_command(op):
    """A block form (`scope -- CMD`) cannot run without its command: alone, its group listing shows."""
    return all(any(a.kind == "argv" and a.required for a in ov.args) for ov in op.overloads)


def _takes_a_word_first(op):
    """Would op read a bare word as its first argument? (`torch fft` takes a tensor first: `fft rfftt` is a typo)"""
    firsts = [next((a for a in ov.args if not a.keyword_only), None) for ov in op.overloads]
    return any(a is not None and a.kind in ("str", "json", "path", "str_list") for a in firsts)


def _snake(word):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", word).lower()


def _close(word, words):
    import difflib
    lowered = {w.lower(): w for w in words}
    return [lowered[w] for w in difflib.get_close_matches(word.lower(), list(lowered), n=3, cutoff=0.7)]


def _all_aliases():
    """aliases.ALIASES and the dtype casts PyTorch documents as `self.to(torch.DTYPE)` (`torch float $x`)."""
    from torchsh.vocab import DTYPES
    from torchsh.table.from_torch import cast_aliases
    return dict(cast_aliases(DTYPES), **aliases.ALIASES)


def group_op(table, group):
    """A row that prints the group's listing (not in the table: `torch ops` and the shell modules never see it)."""
    from torchsh.table.spec import Overload

    def listing(ctx):
        from torchsh.verbs import meta
        return meta.group_help(table, group)
    return OpSpec(name=group, category="shell", summary="the commands of `torch %s`" % group.replace(".", " "),
                  overloads=[Overload(args=())], call=listing, verb=True, lockfree=True, group=True, read_only=True)


def _suggest(name, names):
    import difflib
    close = difflib.get_close_matches(name, list(names), n=3, cutoff=0.75)
    if close:
        return "did you mean %s? `torch ops --search %s` lists more" % (" or ".join(close), name)
    return "`torch ops --search %s` finds ops by name or summary" % name


def build_table():
    """Build the whole table; returns (OpTable, seconds it took)."""
    from torchsh.table import cache, from_torch
    from torchsh import verbs
    start = time.perf_counter()
    was_enabled = gc.isenabled()
    gc.disable()  # thousands of small rows: with torch loaded, cyclic-GC passes cost more than the build
    try:
        rows = cache.cached_rows(from_torch.torch_ops) + from_torch.tensor_properties() + verbs.all_verbs()
        table = OpTable(rows)
    finally:
        if was_enabled:
            gc.enable()
    return table, time.perf_counter() - start


__all__ = ["OpTable", "OpSpec", "build_table"]
