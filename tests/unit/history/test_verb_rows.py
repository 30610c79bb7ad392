"""What `torch history` knows of a verb is on the verb's row (OpSpec.writes, form, no_form): every verb the log
keeps (one that makes a handle or writes in place) has a PyTorch form for `--python` or says why it has none,
and what it writes names its own arguments; a verb with neither is named here, not silently left out of the
script. The log notes the handles a row says it writes, and the script takes its form and its reason from the
row its table holds."""
from types import SimpleNamespace

import pytest
import torch

from torchsh.errors import TorchshError
from torchsh.history import forms, python
from torchsh.history.log import UNNAMED_STATE, Entry, HistoryLog, logged
from torchsh.registry.store import Registry
from torchsh.table import build_table
from torchsh.table.spec import OpSpec, Overload, parse_schema


def unstated(rows):
    """The verbs the log keeps whose rows have neither a form nor a reason for having none."""
    return sorted(op.name for op in rows if op.verb and logged(op) and op.form is None and not op.no_form)


def misnamed_writes(rows):
    """(verb, word) for each word of a row's `writes` that is none of its arguments and no UNNAMED_STATE."""
    return sorted((op.name, word) for op in rows for word in op.writes
                  if word not in UNNAMED_STATE and all(a.name != word for ov in op.overloads for a in ov.args))


def _row(schema, **facts):
    """A synthetic verb row (names start h_: history/log.py caches what it learns of a row by name)."""
    name, _, args, returns = parse_schema(schema, overload_names=False)
    return OpSpec(name=name, category="x", summary="", overloads=[Overload(args=tuple(args), returns=returns)],
                  verb=True, **facts)


@pytest.fixture(scope="module")
def rows():
    return list(build_table()[0].ops.values())


def test_every_verb_the_history_keeps_has_a_form_or_says_why_it_has_none(rows):
    assert unstated(rows) == [], "give these @verb rows form= (history/) or no_form='why'"


def test_a_verb_that_makes_a_handle_or_writes_in_place_with_neither_is_named(rows):
    made = _row("h_makes(Tensor input) -> Tensor")
    writes = _row("h_writes(Optimizer optimizer) -> None", writes=("optimizer",))
    said = _row("h_said(Tensor input) -> Tensor", no_form="not written yet")
    reads = _row("h_reads(Tensor input) -> Json")  # changes nothing: not logged, so it needs neither
    assert unstated(rows + [made, writes, said, reads]) == ["h_makes", "h_writes"]


def test_what_a_verb_writes_is_one_of_its_arguments_or_state_no_argument_holds(rows):
    assert misnamed_writes(rows) == []
    typo = _row("h_typo(Module model) -> None", writes=("modle",))
    assert misnamed_writes(rows + [typo]) == [("h_typo", "modle")]


def test_the_entry_of_an_in_place_verb_notes_the_handles_its_row_says_it_writes():
    registry = Registry()
    model, other = torch.nn.Linear(2, 1), torch.zeros(2)
    m, t = registry.put(model, "nn"), registry.put(other)
    op = _row("h_writes_model(Module model, Tensor other) -> None", writes=("model", "generator"))
    ctx = SimpleNamespace(registry=registry, made=[])
    log = HistoryLog()
    log.watch(op).done(ctx, {"model": model, "other": other}, None)
    assert log.entries()[0].writes == (("h", m),) and t not in str(log.entries()[0].writes)


def _writer(*rows):
    return python.Writer([], Registry(), SimpleNamespace(ops={r.name: r for r in rows}))


def test_the_script_writes_a_verb_with_the_form_on_its_row_and_refuses_it_with_its_reason():
    formed = _row("h_formed(Tensor input) -> Tensor", form=lambda e, r: ["# %s, as its row writes it" % e.op])
    said = _row("h_said(Tensor input) -> Tensor", no_form="it is not written yet, for a reason")
    assert forms.lines(Entry(0, "h_formed", {}, []), _writer(formed, said)) == ["# h_formed, as its row writes it"]
    with pytest.raises(TorchshError) as refused:
        forms.lines(Entry(0, "h_said", {}, []), _writer(formed, said))
    assert refused.value.code == "not_portable"
    assert refused.value.message == "cannot write h_said as PyTorch: it is not written yet, for a reason"
