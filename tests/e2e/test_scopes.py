"""Memory scopes through real bash: scope -- CMD, keep, nesting, failures, two shells at once, the 1,000-step loop."""
import json

import pytest
import torch

from test_docs import bash_blocks


def count(sh):
    return sum(json.loads(sh("torch daemon status --json"))["objects"].values())


def exists(sh, handle):
    return sh.run("torch shape %s" % handle).code == 0


def test_scope_frees_every_handle_made_inside(sh):
    before = count(sh)
    out = sh("torch scope -- bash -c 'a=$(torch randn \"[3]\"); b=$(torch add $a $a); echo $a $b'")
    a, b = out.split()
    assert count(sh) == before
    assert not exists(sh, a) and not exists(sh, b)
    r = sh.run("torch value %s" % a)
    assert r.code == 3 and "[unknown_handle]" in r.err


def test_scope_prints_nothing_of_its_own(sh):
    r = sh.run("torch scope -- true")
    assert (r.out, r.err, r.code) == ("", "", 0)
    r = sh.run("torch scope -- bash -c 'torch randn \"[2]\" >/dev/null'")
    assert (r.out, r.err, r.code) == ("", "", 0)


def test_kept_handles_outlive_the_scope(sh):
    before = count(sh)
    kept, dropped = sh("torch scope -- bash -c 'a=$(torch randn \"[3]\"); b=$(torch mul $a 2); "
                       "torch keep $b; echo $b $a'").split()
    assert exists(sh, kept) and not exists(sh, dropped)
    assert count(sh) == before + 1


def test_keep_reads_handles_from_stdin(sh):
    out = sh("torch scope -- bash -c 'torch randn \"[2]\" | tee /dev/stderr | torch keep' 2>&1")
    assert exists(sh, out)


def test_scope_frees_handles_when_the_command_fails(sh):
    before = count(sh)
    r = sh.run("torch scope -- bash -c 'torch randn \"[3]\"; torch zeros \"[2]\"; exit 7'")
    assert r.code == 7
    assert count(sh) == before


def test_scope_frees_handles_when_the_command_is_killed(sh):
    before = count(sh)
    r = sh.run("torch scope -- bash -c 'torch randn \"[3]\" >/dev/null; kill -9 $$'")
    assert r.code == 137
    assert count(sh) == before


def test_scope_of_a_missing_command_exits_127_and_cleans_up(sh):
    before = count(sh)
    r = sh.run("torch scope -- no-such-command-xyz")
    assert r.code == 127 and "no-such-command-xyz" in r.err
    assert count(sh) == before


def test_scope_needs_a_command(sh):
    r = sh.run("torch scope --")
    assert r.code == 2 and "needs a command after --" in r.err


def test_scopes_nest_and_keep_moves_one_level_out(sh):
    before = count(sh)
    script = """
    torch scope -- bash -c '
      outer=$(torch randn "[2]")
      inner=$(torch scope -- bash -c "k=\\$(torch randn \\"[2]\\"); torch randn \\"[5]\\" >/dev/null; torch keep \\$k; echo \\$k")
      torch shape $inner >/dev/null && echo inner-kept-alive
      echo $outer $inner > handles.txt
    '
    cat handles.txt
    """
    out = sh(script).split("\n")
    assert out[0] == "inner-kept-alive"
    outer, inner = out[1].split()
    assert not exists(sh, outer) and not exists(sh, inner)  # the outer scope's end took both
    assert count(sh) == before


def test_keep_twice_reaches_the_global_registry_from_a_nested_scope(sh):
    before = count(sh)
    out = sh("torch scope -- bash -c 'torch scope -- bash -c \"h=\\$(torch randn \\\"[2]\\\"); torch keep \\$h; "
             "echo \\$h\" > h.txt; torch keep $(cat h.txt)'; cat h.txt")
    assert exists(sh, out)
    assert count(sh) == before + 1


def test_keep_of_a_handle_from_outside_the_scope_changes_nothing(sh):
    g = sh("torch randn '[2]'")
    sh("torch scope -- torch keep %s" % g)
    assert exists(sh, g)
    outer_made = sh("torch scope -- bash -c 'o=$(torch randn \"[2]\"); torch scope -- torch keep $o; "
                    "torch shape $o >/dev/null; echo $o'")
    assert not exists(sh, outer_made)  # kept in the inner scope: it already lived in the outer one


def test_concurrent_scopes_from_two_shells_do_not_free_each_others_handles(sh):
    script = r"""
    dir=$(mktemp -d)
    torch scope -- bash -c '
      a=$(torch randn "[2]"); echo $a > '$dir'/a
      while [ ! -f '$dir'/b_done ]; do sleep 0.02; done
      torch value $a >/dev/null && echo A-still-alive' &
    torch scope -- bash -c '
      while [ ! -f '$dir'/a ]; do sleep 0.02; done
      b=$(torch randn "[2]"); torch mul $b 2 >/dev/null'
    touch $dir/b_done
    wait
    cat $dir/a
    """
    before = count(sh)
    out = sh(script).split()
    assert out[0] == "A-still-alive"
    assert not exists(sh, out[1])
    assert count(sh) == before


def test_two_shells_looping_in_scopes_keep_exactly_what_they_keep(sh):
    loop = ("for i in $(seq 25); do torch scope -- bash -c 'x=$(torch randn \"[2]\"); torch mul $x $x >/dev/null; "
            "torch keep $x; echo $x'; done > %s")
    before = count(sh)
    sh("(%s) & (%s) & wait; cat kept1 kept2 > kept" % (loop % "kept1", loop % "kept2"))
    kept = sh("cat kept").split()
    assert len(set(kept)) == 50
    assert count(sh) == before + 50
    assert all(exists(sh, h) for h in kept[::7])
    sh("torch free $(cat kept)")


def test_scope_begin_and_end_for_interactive_use(sh):
    before = count(sh)
    out = sh("export TORCHSH_SCOPE=$(torch scope begin); a=$(torch randn '[2]'); b=$(torch randn '[2]'); "
             "torch keep $b; torch scope end; echo $a $b")
    a, b = out.split()
    assert not exists(sh, a) and exists(sh, b)
    assert count(sh) == before + 1


def test_scope_end_of_an_ended_scope_is_an_error(sh):
    r = sh.run("s=$(torch scope begin); torch scope end $s; torch scope end $s")
    assert r.code == 2 and "no open scope" in r.err


def test_scope_inside_an_interactive_scope_nests(sh):
    out = sh("export TORCHSH_SCOPE=$(torch scope begin); "
             "k=$(torch scope -- bash -c 'k=$(torch randn \"[2]\"); torch keep $k; echo $k'); "
             "torch shape $k >/dev/null && echo alive; torch scope end; echo $k")
    alive, k = out.split()
    assert alive == "alive" and not exists(sh, k)


@pytest.mark.slow
def test_canonical_loop_from_the_docs_holds_a_flat_object_count_over_1000_iterations(sh):
    [(_, code)] = bash_blocks(marker=True)
    assert "seq 1000" in code
    before = count(sh)
    out = sh(code, timeout=1800)
    assert count(sh) == before + 2  # w and the final `torch grad` snapshot; without scopes: 4,000 more
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for _ in range(1000):
        (w * w).sum().backward()
    assert out == "[%s]" % ",".join("%.1f" % v for v in w.grad.tolist())
    assert out == "[2000.0,4000.0,6000.0]"
