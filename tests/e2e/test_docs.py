"""Every ```bash example in docs/ runs, exits 0, and prints what its `# => TEXT` comments say, in order.

Here in tests/e2e they also run through the fast bash path (scripts/test.sh's second pass runs the
families marked `fastpath`). Their ```nu twins run in tests/shells/test_docs_nu_twins.py. The block marked
<!-- canonical-loop --> (1,000 iterations) is run by tests/e2e/test_scopes.py, which also checks the object
count stays flat.
"""
import glob
import os
import re

import pytest

# A slow family (the tier rule: tests/conftest.py) that the fast-path pass runs anyway: what users copy
# from the docs runs through the function they use
pytestmark = [pytest.mark.slow, pytest.mark.fastpath]

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
_BLOCK = re.compile(r"(<!-- canonical-loop -->\n)?```(bash|nu|zsh)\n(.*?)```", re.S)


def bash_blocks(marker=False, shell="bash"):
    """(doc:index, code) of every bash (or zsh) block in docs/; marker=True gives only the canonical loop."""
    out = []
    for path in sorted(glob.glob(os.path.join(DOCS, "*.md"))):
        with open(path) as f:
            for i, m in enumerate(_BLOCK.finditer(f.read())):
                if m.group(2) == shell and bool(m.group(1)) == marker:
                    out.append(("%s:%d" % (os.path.basename(path), i), m.group(3)))
    return out


def expectations(code):
    return [m.strip() for m in re.findall(r"# => (.+)$", code, re.M)]


def test_the_docs_have_their_examples():
    assert len(bash_blocks()) >= 15
    assert len(bash_blocks(marker=True)) == 1


@pytest.mark.parametrize("where,code", bash_blocks(), ids=[w for w, _ in bash_blocks()])
def test_doc_example_runs_and_prints_what_it_says(sh, where, code):
    out = sh("set -e\ncd \"$(mktemp -d)\"\n" + code)
    pos = 0
    for want in expectations(code):
        found = out.find(want, pos)
        assert found >= 0, "%s: expected %r after position %d in\n%s" % (where, want, pos, out)
        pos = found + len(want)


@pytest.mark.parametrize("where,code", bash_blocks(shell="zsh"), ids=[w for w, _ in bash_blocks(shell="zsh")])
def test_zsh_doc_example_runs_and_prints_what_it_says(sh, where, code):
    """The ```zsh blocks run in real zsh (installed by scripts/bootstrap.sh --with-shells; CI has it)."""
    import shutil
    import subprocess
    zsh = shutil.which("zsh")
    assert zsh, "zsh is not installed: scripts/bootstrap.sh --with-shells"
    p = subprocess.run([zsh, "-f", "-c", "set -e\ncd \"$(mktemp -d)\"\n" + code], env=sh.env, capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, "%s: exit %d\n%s" % (where, p.returncode, p.stderr)
    pos = 0
    for want in expectations(code):
        found = p.stdout.find(want, pos)
        assert found >= 0, "%s: expected %r after position %d in\n%s" % (where, want, pos, p.stdout)
        pos = found + len(want)
