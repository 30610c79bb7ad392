"""Error paths of generated ops: one stderr line `torch: OP: problem; usage: … [code]` and the exit
status of the error's class (2 usage/bad argument, 4 PyTorch refused)."""
import pytest
import torch


@pytest.fixture(scope="module")
def handles(sh):
    return {"a": sh.put(torch.randn(2, 3)), "b": sh.put(torch.randn(4)), "i": sh.put(torch.tensor([1, 2, 3]))}


@pytest.mark.parametrize("command, code, exit_status, words", [
    # wrong arity
    ("torch add $a", "missing_argument", 2, ["expected 1 handle(s) on stdin, got 0"]),
    ("torch neg $a $a $a", "bad_argument", 2, ["too many arguments"]),
    ("torch transpose $a 0", "missing_argument", 2, ["missing dim1"]),
    # wrong argument kinds
    ("torch sum $a --dim abc", "bad_argument", 2, ["--dim wants", "abc"]),
    ("torch zeros abc", "bad_argument", 2, ["size wants", "abc"]),
    ("torch max $a --bogus 1", "unknown_flag", 2, ["unknown flag --bogus"]),
    # a handle where a number is needed, and a fraction where an int is
    ("torch topk $a $a", "bad_argument", 2, ["k wants int, got a handle"]),
    ("torch topk $a 2.5", "bad_argument", 2, ["k wants int, got the number 2.5"]),
    ("torch randint 10 '[2]' --low $a", "bad_argument", 2, ["--low wants int, got a handle"]),
    # a number where a tensor is needed becomes a 0-d tensor, which PyTorch then refuses
    ("torch linalg.qr 3", "shape_mismatch", 4, ["at least 2 dimensions"]),
    # dtype and shape errors
    ("torch mean $i", "dtype_error", 4, ["floating point", "Long"]),
    ("torch add $a $b", "shape_mismatch", 4, ["shapes [2,3] and [4] are not broadcastable"]),
    ("torch mm $a $a", "shape_mismatch", 4, ["cannot be multiplied (2x3 and 2x3)"]),
])
def test_errors_name_the_op_and_the_problem_with_usage(sh, handles, command, code, exit_status, words):
    r = sh.run("a=%(a)s; b=%(b)s; i=%(i)s; " % handles + command)
    op = command.split()[1]
    assert r.code == exit_status, r.err
    assert r.out == "" and r.err.count("\n") == 1, r.err
    line = r.err.strip()
    assert line.startswith("torch: %s: " % op) and line.endswith("[%s]" % code), line
    assert "usage: torch " in line or code == "unknown_flag", line
    for w in words:
        assert w in line, line


def test_unknown_op_suggests_close_names(sh):
    r = sh.run("torch linalg.qrr 1")
    assert r.code == 2 and "[unknown_op]" in r.err


def test_errors_never_take_the_daemon_down(sh, handles):
    sh.run("torch mm %(a)s %(a)s; torch topk %(a)s %(a)s" % handles)
    assert sh("torch neg %(a)s >/dev/null && echo alive" % handles) == "alive"
