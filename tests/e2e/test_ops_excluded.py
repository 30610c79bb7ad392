"""`torch ops --excluded [GROUP] [--search WORD] [--json]`: the PyTorch functions the op table leaves
out, each with its group and reason (table/exclusions.py), as an aligned table or JSON rows."""
import json

import pytest

from torchsh.table import exclusions, from_torch


@pytest.fixture(scope="module")
def groups():
    """In-process oracle: {group: (reason, names)} over the namespaces the table is built from."""
    return exclusions.excluded(from_torch.NAMESPACES)


def test_excluded_lists_every_left_out_function_with_its_group_and_reason(sh, groups):
    rows = json.loads(sh("torch ops --excluded --json"))
    assert {(r["name"], r["group"], r["reason"]) for r in rows} == {
        (name, group, reason) for group, (reason, names) in groups.items() for name in names}
    by_name = {r["name"]: r for r in rows}
    assert by_name["eig"]["group"] == "removed" and by_name["cholesky"]["group"] == "deprecated"
    assert by_name["abs_"]["group"] == "in-place" and by_name["__getattr__"]["group"] == "private"
    assert not set(by_name) & {r["name"] for r in json.loads(sh("torch ops --json")) if not r["verb"]}


def test_excluded_text_is_an_aligned_table_public_names_first(sh):
    lines = sh("torch ops --excluded").splitlines()
    public = [line for line in lines if not line.startswith("_")]
    assert lines[:len(public)] == public and len(public) < len(lines)
    cholesky = next(line for line in lines if line.split()[0] == "cholesky")
    column = cholesky.index("deprecated")
    fitting = [line for line in lines if len(line.split()[0]) < column - 1]
    assert all(line[column - 2:column] == "  " and line[column] != " " for line in fitting)
    assert "deprecated in PyTorch's own docs" in cholesky


def test_a_group_word_and_search_narrow_the_excluded_list(sh, groups):
    removed = [line.split()[0] for line in sh("torch ops --excluded removed").splitlines()]
    assert sorted(removed) == sorted(groups["removed"][1]) and "eig" in removed
    found = json.loads(sh("torch ops --excluded --search from_numpy --json"))
    assert [(r["name"], r["group"]) for r in found] == [("from_numpy", "interop")]
    by_reason = {r["name"] for r in json.loads(sh("torch ops --excluded --search quantized --json"))}
    assert set(groups["quantization"][1]) <= by_reason


def test_an_unknown_group_is_a_usage_error_naming_the_groups(sh):
    r = sh.run("torch ops --excluded nosuch")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "groups: backend, deprecated" in r.err and "[bad_argument]" in r.err


def test_ops_help_documents_excluded(sh):
    out = sh("torch ops --help")
    assert "[--excluded]" in out.splitlines()[0]
    assert "leaves out" in out and "torch ops --excluded deprecated" in out
