"""Every op of the table that has a parity sample, in three forms: its arguments, its first tensor piped
(`echo $a | torch OP …`; the tensors of a leading list piped one per line), and its first tensor as `-`
(`echo $a | torch OP - …`). All three must equal in-process PyTorch bit for bit, so they equal each other.

Stdin fills only a slot the words leave open; it never displaces a binding the words make on their own
(so `while read` loops keep their input). Where the words after the first tensor bind by themselves
(`linear $w $b`: input=$w, weight=$b), the piped form names them as flags (`echo $x | torch linear
--weight $w --bias $b`), which is what a user who pipes into such an op types."""
import functools
import shlex

import pytest
import torch

import parity_runner as runner
from samples import Sample
from torchsh.call import bind, parse
from torchsh.table import build_table
from torchsh.table.categories import CATEGORIES

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)

FORMS = ("args", "piped", "dash")


@functools.lru_cache(maxsize=None)
def cases_by_category():
    table, _ = build_table()
    out = {c: [] for c in CATEGORIES}
    for op in sorted(table.ops.values(), key=lambda o: o.name):
        if op.verb:
            continue
        case, _ = runner.pick(op)
        if case is not None and case.sample.args and _tensors(case.sample.args[0]):
            out[op.category].append(case)
    return out


def _tensors(value):
    """The tensors of a leading argument (one tensor, or a list of them); None for anything else."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, torch.Tensor) for v in value):
        return value
    return None


def _leading(case):
    """(tensors of the leading slot, index of the first other sample argument): a `*Tensor` op
    (block_diag(a, b)) takes every leading tensor in its one variadic slot."""
    args = case.sample.args
    if isinstance(args[0], torch.Tensor) and case.op.overloads[0].args[0].kind == "tensors":
        n = next((i for i, a in enumerate(args) if not isinstance(a, torch.Tensor)), len(args))
        return list(args[:n]), n
    return _tensors(args[0]), 1


def _binds_alone(op, words):
    parsed = parse.split_argv(op, words)
    return bind.choose(op, parsed.positionals, parsed.flags)[0]


def _stdin_unread(op, words):
    """Would `echo $a | torch OP WORDS` leave stdin unread (the words bind as well on their own)?"""
    parsed = parse.split_argv(op, words)
    alone = bind.choose(op, parsed.positionals, parsed.flags)[0]
    piped = bind.stdin_choice(op, parsed.positionals, parsed.flags)
    return alone is not None and (piped is None or alone.score >= piped.score)


def _piped_words(case, first, rest, handles):
    """The words after the piped tensor; as flags where they would bind on their own (see above)."""
    n_pos = len(case.sample.args) - 1
    pos = runner.words(Sample(case.sample.args[1:]), handles) if n_pos else []
    if len(first) != 1 or len(pos) != n_pos or not _stdin_unread(case.op, rest):
        return rest
    full = _binds_alone(case.op, first + rest)
    slots = [a for a in full.overload.args if not a.keyword_only and a.name not in case.sample.kwargs]
    return [w for a, word in zip(slots[1:], pos) for w in ("--" + a.name, word)] + rest[n_pos:]


def command(case, form, handles):
    tensors, skip = _leading(case)
    first = [handles[id(t)] for t in tensors]
    rest = runner.words(Sample(case.sample.args[skip:], case.sample.kwargs), handles)
    if form == "args":
        words, piped = first + rest, None
    elif form == "piped":
        words, piped = _piped_words(case, first, rest, handles), first
    else:  # the first tensor as `-`; the rest of a leading list stays in place
        words, piped = ["-"] + first[1:] + rest, first[:1]
    cmd = " ".join(shlex.quote(w) for w in ["torch", case.op.name] + words)
    return "printf '%%s\\n' %s | %s" % (" ".join(piped), cmd) if piped else cmd


def run_forms(sh, cases):
    """[(case, exit status, output lines)] for every case in every form, from one bash script."""
    tensors = runner.input_tensors(cases)
    path = sh.tmp("inputs.pt")
    torch.save({"t%d" % i: t for i, t in enumerate(tensors.values())}, path)
    loaded = __import__("json").loads(sh("torch load %s --json" % path))
    handles = {key: loaded["t%d" % i] for i, key in enumerate(tensors)}
    runs, lines = [], []
    for case in cases:
        for form in FORMS:
            runs.append(runner.Case(case.op, case.sample, case.expected, case.seeded, form=form))
            seed = "torch manual_seed 0 >/dev/null; " if case.seeded else ""
            lines.append("echo '@@%d'; %s%s 2>&1; echo \"@@rc $?\"" % (len(runs) - 1, seed,
                                                                        command(case, form, handles)))
    return runner._split(sh.run("\n".join(lines), timeout=900).out, runs)


def test_forms_cover_every_op_with_a_leading_tensor_sample(capsys):
    count = sum(len(v) for v in cases_by_category().values())
    with capsys.disabled():
        print("\nparity forms: %d ops in 3 forms (arguments, piped, -)" % count)
    assert count >= 500


@pytest.mark.parametrize("category", CATEGORIES)
def test_arguments_piped_and_dash_forms_equal_pytorch(sh, category):
    cases = cases_by_category()[category]
    if not cases:
        pytest.skip("no op of category %s has a sample with a leading tensor" % category)
    results = run_forms(sh, cases)
    assert len(results) == 3 * len(cases), "the batch script stopped early"
    handles = sorted({line.strip() for _, code, body in results if code == 0 for line in body
                      if runner.looks_like_handle(line.strip())})
    problems = runner.check(results, runner.fetch_all(sh, handles))
    assert not problems, "\n".join("%s: %s" % p for p in problems)
