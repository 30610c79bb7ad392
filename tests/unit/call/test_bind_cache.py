"""call/bind.best remembers the binding decision per op and shape of the words; it must choose exactly
what the uncached binder (bind.choose) chooses, for every op of the parity samples, in both faces'
token forms, and again for new words of the same shape (the remembered plan applied to other values)."""
import functools
import itertools
import os
import sys

import pytest
import torch

from torchsh.call import bind, parse, tokens
from torchsh.table import build_table

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "parity"))
import parity_runner  # noqa: E402  (plain modules of the parity suite: samples and their words)


@functools.lru_cache(maxsize=None)
def cases():
    """(op, sample) for every PyTorch op with a parity sample: its first candidate (in-process check skipped)."""
    table, _ = build_table()
    out = []
    for op in sorted(table.ops.values(), key=lambda o: o.name):
        if op.verb:
            continue
        sample = next(iter(parity_runner.candidates(op)), None)
        if sample is not None:
            out.append((op, sample))
    return out


class _Handles(dict):
    """Every tensor gets a fresh handle (so a second set of words has other values, same shape)."""
    serial = itertools.count(1)

    def __missing__(self, key):
        self[key] = "tensor://abc%05d" % next(self.serial)
        return self[key]


def _cli_words(op, sample):
    parsed = parse.split_argv(op, parity_runner.words(sample, _Handles()))
    return parsed.positionals, parsed.flags


def _same(a, b):
    assert (a is None) == (b is None)
    if a is None:
        return
    assert a.overload is b.overload and a.score == b.score and a.missing == b.missing
    assert a.values.keys() == b.values.keys()
    for name, v in a.values.items():
        w = b.values[name]
        assert (list(v) == list(w)) if isinstance(v, list) else (v is w or v == w), name


def test_cached_binder_chooses_as_the_uncached_one_for_every_parity_sample():
    assert len(cases()) > 300
    bind._PLANS.clear()
    for op, sample in cases():
        for _ in range(2):  # the first fills the plan, the second reads it, with other handles
            positionals, flags = _cli_words(op, sample)
            _same(bind.best(op, positionals, flags), bind.choose(op, positionals, flags)[0])
    assert bind._PLANS, "nothing was remembered: the test compared the uncached binder with itself"


def test_cached_binder_chooses_as_the_uncached_one_for_json_tokens():
    bind._PLANS.clear()
    for op, sample in cases():
        for _ in range(2):
            handles = _Handles()
            positionals = [tokens.from_json(_json(v, handles)) for v in sample.args]
            flags = {k: tokens.from_json(_json(v, handles)) for k, v in sample.kwargs.items()}
            if any(isinstance(v, list) and v and isinstance(v[0], str) for v in sample.kwargs.values()):
                continue
            _same(bind.best(op, positionals, flags), bind.choose(op, positionals, flags)[0])


def _json(value, handles):
    if isinstance(value, torch.Tensor):
        return handles[id(value)]
    if isinstance(value, (list, tuple)):
        return [_json(v, handles) for v in value]
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


@pytest.mark.parametrize("name,first,second", [
    ("add", ["tensor://abc00001", "tensor://abc00002"], ["tensor://abc00003", "2"]),  # add.Tensor, add.Scalar
    ("std", ["tensor://abc00001", "1"], ["tensor://abc00001", "2"]),  # std(unbiased) then std(dim): 1 may be a bool
    ("add", ["tensor://abc00001", "nn://abc00002"], ["tensor://abc00001", "tensor://abc00002"]),  # a handle's kind
    ("sum", ["tensor://abc00001", "1"], ["tensor://abc00001", "int64"]),  # sum(dim), then sum(dtype)
    ("view", ["tensor://abc00001", "int64"], ["tensor://abc00001", "3,4"]),  # view(dtype), view(size): a text
])
def test_a_remembered_plan_never_applies_to_words_of_another_shape(name, first, second):
    table, _ = build_table()
    op = table.lookup(name)[0]
    bind._PLANS.clear()
    chosen = []
    for words in (first, second, first):
        positionals = [tokens.from_word(w) for w in words]
        got = bind.best(op, positionals, {})
        _same(got, bind.choose(op, positionals, {})[0])
        chosen.append(got and got.overload)
    assert chosen[0] is chosen[2]
