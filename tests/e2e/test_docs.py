"""Every ```bash example in docs/ runs, exits 0, and prints what its `# => TEXT` comments say, in order.

Here in tests/e2e they also run through the fast bash path (scripts/test.sh's second pass). Their
```nu twins run in tests/shells/test_docs_nu_twins.py. The block marked <!-- canonical-loop -->
(1,000 iterations) is run by tests/e2e/test_scopes.py, which also checks the object count stays flat.
"""
import glob
import os
import re

import pytest

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
_BLOCK = re.compile(r"(<!-- canonical-loop -->\n)?```(bash|nu)\n(.*?)```", re.S)


def bash_blocks(marker=False):
    """(doc:index, code) of every bash block in docs/; marker=True gives only the canonical loop."""
    out = []
    for path in sorted(glob.glob(os.path.join(DOCS, "*.md"))):
        with open(path) as f:
            for i, m in enumerate(_BLOCK.finditer(f.read())):
                if m.group(2) == "bash" and bool(m.group(1)) == marker:
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
