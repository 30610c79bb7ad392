"""Registry scopes in-process: begin/end, nesting, keep, and two shells' scopes side by side."""
import threading

import pytest

from torchsh.errors import TorchshError
from torchsh.registry.store import Registry


def test_end_scope_frees_only_handles_made_in_it():
    r = Registry()
    outside = r.put("g")
    s = r.begin_scope()
    inside = r.put("x", scope=s)
    assert r.end_scope(s) == 1
    assert r.get(outside) == "g"
    with pytest.raises(TorchshError) as e:
        r.get(inside)
    assert e.value.code == "unknown_handle"


def test_ending_a_scope_ends_the_scopes_opened_inside_it():
    r = Registry()
    outer = r.begin_scope()
    inner = r.begin_scope(outer)
    innermost = r.begin_scope(inner)
    hs = [r.put(i, scope=s) for i, s in enumerate((outer, inner, innermost))]
    assert r.end_scope(outer) == 3
    assert r.open_scopes() == {}
    assert all(h not in dict(r.items()) for h in hs)


def test_ending_an_inner_scope_leaves_the_outer_one_alone():
    r = Registry()
    outer = r.begin_scope()
    inner = r.begin_scope(outer)
    a = r.put("a", scope=outer)
    r.put("b", scope=inner)
    r.end_scope(inner)
    assert r.get(a) == "a"
    assert r.open_scopes() == {outer: 1}


def test_keep_moves_a_handle_to_the_enclosing_scope_then_to_global():
    r = Registry()
    outer = r.begin_scope()
    inner = r.begin_scope(outer)
    h = r.put("x", scope=inner)
    r.keep([h], inner)
    assert r.entry(h).scope == outer
    r.end_scope(inner)
    assert r.get(h) == "x"
    r.keep([h], outer)
    assert r.entry(h).scope is None
    r.end_scope(outer)
    assert r.get(h) == "x"


def test_keep_never_moves_a_handle_that_lives_further_out():
    r = Registry()
    outer = r.begin_scope()
    inner = r.begin_scope(outer)
    h = r.put("x", scope=outer)
    r.keep([h], inner)  # already outlives inner: keeping it must not promote it past outer
    assert r.entry(h).scope == outer


def test_keep_cannot_reach_into_a_sibling_scope():
    r = Registry()
    a, b = r.begin_scope(), r.begin_scope()
    h = r.put("x", scope=a)
    r.keep([h], b)
    assert r.entry(h).scope == a
    r.end_scope(b)
    assert r.get(h) == "x"
    r.end_scope(a)
    assert h not in dict(r.items())


def test_keep_is_atomic_on_an_unknown_handle():
    r = Registry()
    s = r.begin_scope()
    h = r.put("x", scope=s)
    with pytest.raises(TorchshError):
        r.keep([h, "tensor://%s99999" % r.epoch], s)
    assert r.entry(h).scope == s


def test_keep_outside_any_scope_makes_a_handle_global():
    r = Registry()
    s = r.begin_scope()
    h = r.put("x", scope=s)
    r.keep([h], None)
    r.end_scope(s)
    assert r.get(h) == "x"


def test_put_into_an_ended_scope_goes_to_the_global_registry():
    r = Registry()
    s = r.begin_scope()
    r.end_scope(s)
    h = r.put("late", scope=s)
    assert r.entry(h).scope is None


def test_begin_with_an_unknown_parent_starts_a_top_level_scope():
    r = Registry()
    s = r.begin_scope("scope-nope")
    h = r.put("x", scope=s)
    r.end_scope(s)
    assert h not in dict(r.items())


def test_ending_an_unknown_scope_is_an_error():
    r = Registry()
    s = r.begin_scope()
    r.end_scope(s)
    with pytest.raises(TorchshError) as e:
        r.end_scope(s)
    assert e.value.code == "bad_argument"


def test_freed_handle_leaves_its_scope():
    r = Registry()
    s = r.begin_scope()
    h = r.put("x", scope=s)
    r.free([h])
    assert r.open_scopes() == {s: 0}
    assert r.end_scope(s) == 0


def test_concurrent_scopes_never_free_each_others_handles():
    r = Registry()
    survivors, errors = [], []

    def shell(n):
        try:
            for _ in range(200):
                s = r.begin_scope()
                mine = [r.put(n, scope=s) for _ in range(3)]
                r.keep(mine[:1], s)
                r.end_scope(s)
                survivors.append(mine[0])
                assert all(h not in dict(r.items()) for h in mine[1:])
        except Exception as e:  # surfaced below: a thread's assert does not fail the test by itself
            errors.append(e)

    threads = [threading.Thread(target=shell, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(h for h, _ in r.items()) == sorted(survivors)
    assert len(survivors) == 800
    assert r.open_scopes() == {}
