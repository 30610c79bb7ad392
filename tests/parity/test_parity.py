"""The generated parity suite: every op of the table that has a sample input runs through the real
`torch` CLI (from bash, against the session daemon) and through in-process PyTorch on the same
inputs; results must match exactly (dtype, shape, bits; NaN positions equal). Random ops run right
after `torch manual_seed 0` on both sides. A subset also runs in the stdin form (`echo $a | torch OP`).
Ops without a sample are listed with the reason by test_ops_without_a_sample_are_listed_with_reasons.
"""
import functools

import pytest

import parity_runner as runner
from torchsh.table import build_table
from torchsh.table.categories import CATEGORIES

MIN_COVERAGE = 0.90
# where every op must have a sample unless samples.NO_SAMPLE_REASONS says why
FULL_CATEGORIES = ("pointwise", "reduction", "comparison", "shape", "linalg", "activation")
STDIN_CATEGORIES = ("pointwise", "reduction", "comparison", "activation", "special", "linalg", "loss")


@functools.lru_cache(maxsize=None)
def plan():
    """(cases by category, {op name: reason}) over every PyTorch op of the table."""
    table, _ = build_table()
    cases, missing = {c: [] for c in CATEGORIES}, {}
    for op in sorted(table.ops.values(), key=lambda o: o.name):
        if op.verb:
            continue
        case, reason = runner.pick(op)
        if case is None:
            missing[op.name] = (op.category, reason)
        else:
            cases[op.category].append(case)
    return cases, missing


def stdin_cases(cases):
    """The stdin form for ops whose sample is tensors only: the first comes from stdin."""
    out = []
    for case in cases:
        args = case.sample.args
        if args and all(isinstance(a, runner.torch.Tensor) for a in args) and not case.sample.kwargs:
            out.append(runner.Case(case.op, case.sample, case.expected, case.seeded, form="stdin"))
    return out


@pytest.mark.parametrize("category", CATEGORIES)
def test_cli_results_equal_pytorch_bit_for_bit(sh, category):
    cases = plan()[0][category]
    if category in STDIN_CATEGORIES:
        cases = cases + stdin_cases(cases)
    if not cases:
        pytest.skip("no op of category %s has a sample" % category)
    results = runner.run_batch(sh, cases)
    assert len(results) == len(cases), "the batch script stopped early"
    handles = sorted({line.strip() for _, code, body in results if code == 0 for line in body
                      if runner.looks_like_handle(line.strip())})
    problems = runner.check(results, runner.fetch_all(sh, handles))
    assert not problems, "\n".join("%s: %s" % p for p in problems)


def test_parity_covers_at_least_90_percent_of_the_table():
    cases, missing = plan()
    checked = sum(len(v) for v in cases.values())
    assert checked / (checked + len(missing)) >= MIN_COVERAGE, sorted(missing)


@pytest.mark.parametrize("category", FULL_CATEGORIES)
def test_core_categories_have_a_sample_for_every_op(category):
    from samples import NO_SAMPLE_REASONS
    missing = {n: r for n, (c, r) in plan()[1].items() if c == category and n not in NO_SAMPLE_REASONS}
    assert not missing, missing


def test_ops_without_a_sample_are_listed_with_reasons(capsys):
    cases, missing = plan()
    with capsys.disabled():
        checked = sum(len(v) for v in cases.values())
        print("\nparity: %d ops checked, %d without a sample" % (checked, len(missing)))
        for name, (category, reason) in sorted(missing.items()):
            print("  %-45s %-10s %s" % (name, category, reason))
    assert all(reason for _, reason in missing.values())
