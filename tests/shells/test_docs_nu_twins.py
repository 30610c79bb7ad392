"""Every ```bash example in docs/ has a ```nu twin (the next code block after it), and every nu example
runs and prints what its `# => TEXT` comments say, in order. The bash examples run in
tests/e2e/test_docs.py (so the fast-path pass covers them too).
"""
import glob
import os
import re

import pytest

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
_BLOCK = re.compile(r"(<!-- canonical-loop -->\n)?```(bash|nu)\n(.*?)```", re.S)


def blocks():
    """(doc name, index, language, code, canonical) for every bash and nu block of every doc."""
    out = []
    for path in sorted(glob.glob(os.path.join(DOCS, "*.md"))):
        with open(path) as f:
            text = f.read()
        for i, m in enumerate(_BLOCK.finditer(text)):
            out.append((os.path.basename(path), i, m.group(2), m.group(3), bool(m.group(1))))
    return out


def expectations(code):
    return [m.strip() for m in re.findall(r"# => (.+)$", code, re.M)]


def check_output(out, code, where):
    pos = 0
    for want in expectations(code):
        found = out.find(want, pos)
        assert found >= 0, "%s: expected %r after position %d in\n%s" % (where, want, pos, out)
        pos = found + len(want)


def test_every_bash_example_has_a_nu_twin():
    missing = []
    all_blocks = blocks()
    for n, (doc, i, lang, code, _) in enumerate(all_blocks):
        following = all_blocks[n + 1] if n + 1 < len(all_blocks) else None
        if lang == "bash" and not (following and following[0] == doc and following[2] == "nu"):
            missing.append("%s block %d: %s" % (doc, i, code.strip().split("\n")[0]))
    assert not missing, "bash examples without a ```nu twin right after them:\n" + "\n".join(missing)


def test_the_docs_have_nu_examples():
    assert sum(1 for b in blocks() if b[2] == "nu") >= 10


def nu_blocks():
    return [b for b in blocks() if b[2] == "nu"]


@pytest.mark.parametrize("doc,index,lang,code,canonical", nu_blocks(),
                         ids=["%s-%d-nu" % (b[0], b[1]) for b in nu_blocks()])
def test_nu_doc_example_runs_and_prints_what_it_says(nu, doc, index, lang, code, canonical):
    out = nu("cd (mktemp -d)\n" + code)
    check_output(out, code, "%s block %d (nu)" % (doc, index))
