"""Each escaping function gives back, in its own language, exactly the text it was given, on one line of
printable characters, whatever the text holds: newlines, quotes, `'''`, backslashes, `$(…)`, backticks,
U+202E, escape and other control characters (no NUL: a file name cannot hold one). The oracle is each
language's own reader: Python's eval, bash's echo of a word, nu's print."""
import json
import subprocess
import sys

import pytest

from torchsh.quoting import nu_comment, nu_string, python_comment, python_name, python_string, shell_word

sys.path.insert(0, __file__.rsplit("/unit/", 1)[0] + "/shells")
NASTY = ['a\nopen("PWNED","w")\n#', "q'\"", "t'''x\"\"\"", "b\\x\\", "$(touch PWNED)", "`touch PWNED`",
         "r\u202egnp.", "c\x1b[31m\r\x0b\x0c\x7f\x01\x85\u2028\u2029", "é ü 字", "", "tab\there"]


@pytest.mark.parametrize("text", NASTY)
def test_python_string_is_one_printable_ascii_literal_that_evals_to_the_text(text):
    literal = python_string(text)
    assert all(" " <= c <= "~" for c in literal), literal
    assert eval(literal) == text  # noqa: S307 (the oracle: Python reading what we wrote)
    assert python_comment("of %s" % literal) == "# of " + literal


@pytest.mark.parametrize("text", ["a\nb", "a\rb", "r\u202e", "x\x1b", "a\u2028b", "a\x85b"])
def test_a_comment_that_could_break_its_line_is_refused(text):
    with pytest.raises(ValueError):
        python_comment("of " + text)


def test_python_name_lets_through_identifiers_only():
    assert python_name("mse_loss") == "mse_loss" and python_name("nn.functional.relu", dotted=True)
    for bad in ("a b", "x)\nimport os\n(", "class", "1x", "nn.functional.relu", "é", "", "a.", None):
        with pytest.raises(ValueError):
            python_name(bad)
    with pytest.raises(ValueError):
        python_name("os.system(1)", dotted=True)


@pytest.mark.parametrize("text", NASTY)
def test_shell_word_is_one_word_bash_reads_back_as_the_text(text):
    out = subprocess.run(["bash", "-c", "printf %%s %s" % shell_word(text)], capture_output=True, timeout=30)
    assert out.returncode == 0 and out.stdout.decode() == text


def test_nu_string_is_read_back_by_nu_as_the_text_and_a_comment_stays_on_its_line():
    from nutools import ensure_nu
    nu = ensure_nu()
    texts = [t for t in NASTY if t]
    script = "\n".join("print (%s | to json --raw)" % nu_string(t) for t in texts)
    out = subprocess.run([nu, "--no-config-file", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert [json.loads(line, strict=False) for line in out.stdout.split("\n")[:-1]] == texts
    for t in texts:
        assert "\n" not in nu_comment(t) and "\r" not in nu_comment(t) and nu_comment(t).isprintable()
