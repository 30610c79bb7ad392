"""Assemble the op table: PyTorch's ops (from_torch), hand-written verbs (verbs/), aliases.

Name resolution lives here: a full dotted name (`linalg.qr`), the same split into words
(`torch linalg qr`), a bare name when unambiguous (`gelu` -> nn.functional.gelu), an alias.
Verbs win over ops of the same name; each such shadowing is deliberate and listed by `torch ops`.
"""
import gc
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
            if "." in name and not op.extra.get("words_only"):  # `nn linear`, never a bare `linear`
                short = name.rsplit(".", 1)[1]
                if short in self.ops:
                    continue
                self.bare.setdefault(short, []).append(name)
        self.aliases = {k: v for k, v in aliases.ALIASES.items() if v[0] in self.ops or v[0] in self.bare}
        for alias, (target, _) in self.aliases.items():  # `torch linalg.svd --help` lists `svd`
            op = self.ops.get(target) or self.ops[self.bare[target][0]]
            if alias not in op.aliases:
                op.aliases = tuple(op.aliases) + (alias,)
        self.max_words = max(n.count(".") for n in self.ops) + 1
        # dotted spellings that name a row too: nn.Linear for nn.linear, sched.cosine for sched.cosine_annealing_lr
        self.word_aliases = {a: name for name, op in self.ops.items() for a in op.extra.get("word_aliases", ())}

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
        op, fixed = self.lookup(argv[0])
        return op, fixed, argv[1:]

    def in_category(self, category=None):
        return [op for op in self.ops.values() if category in (None, op.category)]


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
        rows = cache.cached_rows(from_torch.torch_ops) + verbs.all_verbs()
        table = OpTable(rows)
    finally:
        if was_enabled:
            gc.enable()
    return table, time.perf_counter() - start


__all__ = ["OpTable", "OpSpec", "build_table"]
