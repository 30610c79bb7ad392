"""Every ```bash block of docs/autograd.md runs, exits 0, and prints what its `# => TEXT` comments say.

The block marked <!-- canonical-loop --> (1,000 iterations) is run by tests/e2e/test_scopes.py,
which also checks that the object count stays flat.
"""
import os
import re

import pytest

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "autograd.md")
_BLOCK = re.compile(r"(<!-- canonical-loop -->\n)?```bash\n(.*?)```", re.S)


def bash_blocks(marker=False):
    """(index, code) of the doc's bash blocks; marker=True gives only the canonical loop."""
    with open(DOC) as f:
        text = f.read()
    return [(i, m.group(2)) for i, m in enumerate(_BLOCK.finditer(text)) if bool(m.group(1)) == marker]


def expectations(code):
    return [m.strip() for m in re.findall(r"# => (.+)$", code, re.M)]


def test_the_doc_has_its_examples():
    assert len(bash_blocks()) >= 10
    assert len(bash_blocks(marker=True)) == 1


@pytest.mark.parametrize("index,code", bash_blocks(), ids=lambda v: str(v) if isinstance(v, int) else "")
def test_doc_example_runs_and_prints_what_it_says(sh, index, code):
    out = sh("set -e\ncd \"$(mktemp -d)\"\n" + code)
    pos = 0
    for want in expectations(code):
        found = out.find(want, pos)
        assert found >= 0, "block %d: expected %r after position %d in\n%s" % (index, want, pos, out)
        pos = found + len(want)
