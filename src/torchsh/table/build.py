"""Assemble the op table: PyTorch's ops (from_torch), hand-written verbs (verbs/), aliases.

Name resolution lives here: a full dotted name (`linalg.qr`), the same split into words
(`torch linalg qr`), a bare name when unambiguous (`gelu` -> nn.functional.gelu), an alias.
Verbs win over ops of the same name; each such shadowing is deliberate and listed by `torch ops`.
"""
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
        ambiguous = set()
        for name in self.ops:
            if "." in name:
                short = name.rsplit(".", 1)[1]
                if short in self.ops:
                    continue
                if short in self.bare:
                    ambiguous.add(short)
                self.bare.setdefault(short, []).append(name)
        self.aliases = {k: v for k, v in aliases.ALIASES.items() if v[0] in self.ops or v[0] in self.bare}
        self.max_words = max(n.count(".") for n in self.ops) + 1

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
    from torchsh.table import from_torch
    from torchsh import verbs
    start = time.perf_counter()
    rows = list(from_torch.torch_ops()) + verbs.all_verbs()
    table = OpTable(rows)
    return table, time.perf_counter() - start


__all__ = ["OpTable", "OpSpec", "build_table"]
