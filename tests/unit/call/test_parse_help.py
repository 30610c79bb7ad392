"""`-h` is `--help` for every op; a lone `-` in a handle position is a numbered stdin mark."""
import functools

from torchsh.call import parse
from torchsh.table import build_table


@functools.lru_cache(maxsize=None)
def table():
    return build_table()[0]


def parsed(argv):
    op, fixed, words = table().resolve(argv)
    return parse.split_argv(op, words, fixed)


def test_dash_h_asks_for_help_like_dash_dash_help():
    for argv in (["add", "-h"], ["reshape", "-h"], ["add", "tensor://abc00001", "-h"]):
        assert parsed(argv).globals.get("help") is True
    assert parsed(["add", "--help"]).globals.get("help") is True


def test_dashes_are_stdin_marks_numbered_in_argv_order():
    p = parsed(["cat", "-", "tensor://abc00001", "-"])
    assert [t.cls for t in p.positionals] == ["stdin", "handle", "stdin"]
    assert parse.stdin_marks(p) == 2
    positionals, _ = parse.put_stdin(p, ["tensor://abc00002", "tensor://abc00003"], p.flags)
    assert [t.value for t in positionals] == ["tensor://abc00002", "tensor://abc00001", "tensor://abc00003"]


def test_dash_in_a_handle_flag_is_a_mark_but_stays_text_in_a_text_flag():
    assert parse.stdin_marks(parsed(["cat", "--tensors", "-"])) == 1
    p = parsed(["value", "tensor://abc00001", "--format", "-"])
    assert parse.stdin_marks(p) == 0 and p.flags["format"].value == "-"
