"""table/kinds.py and registry/kinds.py: one row per argument kind and per handle kind, which every
reader of kinds (binder, parser, usage, Nushell module, completions, census) goes by."""
import torch

from torchsh.registry.kinds import HANDLE_KINDS, kind_of
from torchsh.table import annotations
from torchsh.table.build import build_table
from torchsh.table.kinds import KINDS, LIST_FLAG_KINDS, STDIN_KINDS, VARIADIC_KINDS


def test_every_argument_of_every_row_has_a_kind_row():
    table, _ = build_table()
    used = {a.kind for op in table.ops.values() for ov in op.overloads for a in ov.args}
    assert used <= set(KINDS), sorted(used - set(KINDS))


def test_the_annotation_rules_name_only_kinds_that_have_rows():
    named = {kind for _, kind, _ in annotations.ANNOTATION_KINDS} | {kind for _, kind in annotations.DEFAULT_KINDS} \
        | {kind for kind, _ in annotations.NAMED_KINDS.values()}
    assert named <= set(KINDS), sorted(named - set(KINDS))


def test_every_handle_kind_an_argument_kind_names_is_a_registry_row():
    assert {k.handle for k in KINDS.values() if k.handle} <= set(HANDLE_KINDS)
    assert all(KINDS[k.item].handle == k.handle for k in KINDS.values() if k.item)


def test_the_shared_groups_hold_what_the_binder_and_parser_knew():
    assert {"tensors", "handles", "modules", "argv"} <= set(VARIADIC_KINDS)
    assert {"tensors", "handles", "modules"} <= set(LIST_FLAG_KINDS)
    assert {"tensor", "tensors", "handle", "handles", "module", "modules", "optimizer", "scheduler"} <= \
        set(STDIN_KINDS)
    assert not {"int", "scalar", "str", "json", "int_list"} & (set(VARIADIC_KINDS) | set(STDIN_KINDS))


def test_a_result_is_held_as_the_kind_whose_type_it_has():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2)
    assert [kind_of(x) for x in (torch.zeros(1), model, opt, sched, 3, "x")] == \
        ["tensor", "nn", "optim", "sched", None, None]


def test_a_handle_word_in_a_one_word_slot_of_a_handle_kind_converts_to_the_object_it_names():
    """api/calls.py's remembered plans look such a handle up directly instead of converting its token:
    that holds only while every one-word row with a handle kind converts a handle that way."""
    from types import SimpleNamespace

    from torchsh.call.tokens import Token
    from torchsh.registry import Registry
    registry = Registry()
    ctx = SimpleNamespace(registry=registry)
    rows = [row for row in KINDS.values() if row.handle and not row.variadic]
    assert {row.name for row in rows} >= {"tensor", "module", "optimizer"}
    for row in rows:
        obj = object()
        handle = registry.put(obj, row.handle, None)
        assert row.convert(Token("handle", handle, handle), ctx) is obj, row.name
