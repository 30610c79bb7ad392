"""Every verb's examples (`@verb(..., examples=...)`) are printed by `torch VERB --help` and run as they
stand in bash: each one exits 0 here, inside a scope of its own so the handles it makes are freed, and the
names it makes are freed after it (a name pins its object past the scope, and `@exp1/w` left held would be
name_in_use for the docs' examples that make it)."""
import pytest
from support.cleanup import FREE_NEW_NAMES, NAMES_BEFORE

from torchsh import verbs

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)

# They end the daemon every other test of the session talks to (restart also changes its pid);
# tests/e2e/test_lifecycle.py runs them against daemons of their own.
NOT_RUN = ("daemon.restart", "daemon.stop")
NEEDS_A_CONTEXT = ("session.push",)  # tests/e2e/test_session_cp.py pushes to a second daemon
# It writes every object the daemon holds: the session daemon's, after a thousand tests, take over a
# minute to write (twice a run); a daemon of its own shows the same example in a second
OWN_DAEMON = ("session.save",)

ROWS = sorted((r for r in verbs.all_verbs() if r.cls is None), key=lambda r: r.name)  # not the class-backed kinds
CASES = [pytest.param(r.name, e, id="%s-%d" % (r.name, i)) for r in ROWS for i, e in enumerate(r.examples)
         if r.name not in NEEDS_A_CONTEXT]


def test_every_verb_has_an_example_but_those_that_end_the_daemon():
    assert tuple(r.name for r in ROWS if not r.examples) == NOT_RUN


@pytest.mark.parametrize("name,example", CASES)
def test_verb_example_runs(sh, tmp_path, name, example):
    if name in OWN_DAEMON:
        example = "mkdir -m700 own && export TORCHSH_SOCKET=$PWD/own/s && %s; rc=$?; torch daemon stop; " \
                  "exit $rc" % example
    script = NAMES_BEFORE + "\nexport TORCHSH_SCOPE=$(torch scope begin) || exit 99\n( %s ) >/dev/null\n" \
             "rc=$?\ntorch scope end\n%s\nexit $rc" % (example, FREE_NEW_NAMES)
    r = sh.run(script, cwd=str(tmp_path))
    assert r.code == 0, "torch %s example failed (exit %d): %s\n%s" % (name, r.code, example, r.err)


def test_help_prints_the_verbs_examples(sh):
    rows = {r.name: r for r in ROWS}
    for name in ("step", "ops", "nn.sequential"):
        shown = sh("torch %s --help" % name.replace(".", " "))
        lines = shown.split("\n")
        assert all("  " + e in lines for e in rows[name].examples), shown
