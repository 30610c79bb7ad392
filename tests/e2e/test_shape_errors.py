"""Shape errors are shape_mismatch (exit 4) wherever PyTorch's message is about shapes, through real bash."""
import pytest


@pytest.mark.parametrize("script, words", [
    ("a=$(torch ones 3); b=$(torch ones 3); torch mm $a $b", "must be a matrix"),
    ("a=$(torch ones 3); torch bmm $(torch ones '[2,3]') $(torch ones '[2,3]')", "3D tensor"),
    ("torch dot $(torch ones '[2,3]') $(torch ones '[2,3]')", "1D tensors expected"),
    ("torch reshape $(torch ones '[2,3]') '[4]'", "invalid for input of size 6"),
    ("torch cat $(torch ones '[2,3]') $(torch ones 3)", "same number of dimensions"),
    ("torch linalg inv $(torch ones '[2,3]')", "square matrices"),
    ("torch nn functional linear $(torch ones '[2,3]') $(torch ones '[2,4]')", "cannot be multiplied"),
    ("torch forward $(torch nn linear 4 2) $(torch ones '[2,3]')", "cannot be multiplied"),
])
def test_shape_messages_are_shape_mismatch(sh, script, words):
    r = sh.run(script)
    assert r.code == 4 and r.out == "", r.err
    line = r.err.strip()
    assert "\n" not in line and line.endswith("[shape_mismatch]") and words in line, line
