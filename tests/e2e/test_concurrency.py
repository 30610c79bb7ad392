"""Connections are served concurrently; nothing is lost when many shells work at once."""
import json

import pytest


@pytest.mark.slow
def test_eight_shells_times_fifty_ops_make_exactly_400_objects(fresh_sh):
    s = fresh_sh()
    before = len(json.loads(s("torch tensors --json")))
    script = " & ".join("(for i in $(seq 50); do torch ones '[2]'; done > out%d)" % k for k in range(8))
    s(script + " & wait")
    handles = s("cat out*").split("\n")
    assert len(handles) == 400 and len(set(handles)) == 400
    rows = json.loads(s("torch tensors --json"))
    assert len(rows) - before == 400
    assert set(handles) <= {r["handle"] for r in rows}


def test_free_is_atomic_and_reads_stdin(sh):
    a, b = sh("torch ones '[1]'"), sh("torch ones '[1]'")
    gone = sh("torch ones '[1]'")
    sh("torch free %s" % gone)
    r = sh.run("torch free %s %s" % (a, gone))
    assert r.code == 3 and "[unknown_handle]" in r.err
    assert sh("torch value %s" % a) == "[1.0]"  # nothing was freed
    sh("printf '%s\\n%s\\n' | torch free" % (a, b))
    assert sh.run("torch value %s" % b).code == 3


def test_free_all_empties_the_registry(fresh_sh):
    s = fresh_sh()
    s("torch ones '[1]'; torch ones '[2]'")
    s("torch free --all")
    assert json.loads(s("torch tensors --json")) == []
