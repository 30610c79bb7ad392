"""`torch GROUP WORD` with an unknown WORD: unknown_op (exit 2) naming the group and the word, the nearest
commands of the group, and the group (or top-level op) where the word lives."""
import pytest


def _err(sh, script):
    r = sh.run(script)
    lines = r.err.strip().split("\n")
    assert len(lines) == 1, r.err
    assert r.out == ""
    return r.code, lines[0]


def test_nn_sgd_points_to_optim_sgd(sh):
    code, line = _err(sh, "torch nn sgd")
    assert code == 2 and line.endswith("[unknown_op]")
    assert "`torch nn` has no command 'sgd'" in line
    assert "`torch optim sgd`" in line
    assert "no op named 'nn'" not in line


@pytest.mark.parametrize("argv, group, elsewhere", [
    ("nn Adam", "nn", "`torch optim adam`"),               # a class name of another group
    ("optim cosine", "optim", "`torch sched cosine`"),      # a scheduler's short word
    ("sched adam", "sched", "`torch optim adam`"),
    ("linalg mm", "linalg", "`torch mm`"),                  # a top-level op
    ("special relu", "special", "`torch nn relu`"),
    ("nn one_hot", "nn", "nn.functional.one_hot"),          # a sub-group's op
    ("daemon linear", "daemon", "`torch nn linear`"),
    ("checkpoint adam", "checkpoint", "`torch optim adam`"),
    ("scope relu", "scope", "`torch nn relu`"),
    ("fft mm", "fft", "`torch mm`"),
])
def test_every_group_points_to_the_group_that_has_the_word(sh, argv, group, elsewhere):
    code, line = _err(sh, "torch " + argv)
    word = argv.split()[-1]
    assert code == 2 and line.endswith("[unknown_op]")
    assert "`torch %s` has no command %r" % (group, word) in line
    assert elsewhere.lower() in line.lower()


@pytest.mark.parametrize("argv, group, nearest", [
    ("nn linearr", "nn", "`torch nn linear`"),
    ("nn conv2", "nn", "`torch nn conv2d`"),
    ("optim adamm", "optim", "`torch optim adam`"),
    ("sched cosin", "sched", "`torch sched cosine"),
    ("daemon stat", "daemon", "`torch daemon status`"),
    ("linalg choleski", "linalg", "`torch linalg cholesky`"),
    ("fft rfftt", "fft", "`torch fft rfft`"),
    ("special erff", "special", "`torch special erf"),
    ("nn functional gelux", "nn functional", "`torch nn functional gelu`"),
    ("scope begn", "scope", "`torch scope begin`"),
])
def test_every_group_suggests_its_nearest_commands(sh, argv, group, nearest):
    code, line = _err(sh, "torch " + argv)
    assert code == 2 and line.endswith("[unknown_op]")
    assert line.startswith("torch: %s: " % group)
    assert "has no command %r" % argv.split()[-1] in line
    assert nearest in line


def test_group_word_followed_by_a_handle_is_unknown_op_not_a_traceback(sh):
    code, line = _err(sh, "a=$(torch ones '[2]'); torch nn $a")
    assert code == 2 and line.endswith("[unknown_op]") and "`torch nn` needs a command" in line


def test_group_words_that_are_ops_still_run(sh):
    # `torch fft` is torch.fft.fft through its bare name; `torch scope -- CMD` is a block form
    assert sh("torch tensor '[1.0, 0.0]' | torch fft | torch value") == "[[1.0,0.0],[1.0,0.0]]"
    assert sh("torch scope -- bash -c 'torch ones 2 >/dev/null; echo ran'") == "ran"
