"""Help a PyTorch user expects: the overview, every group's listing, and op help with PyTorch's argument
descriptions and one runnable example per op (every example shown is run here)."""
import json

import pytest

GROUPS = ("nn", "nn functional", "optim", "sched", "daemon", "scope", "checkpoint", "linalg", "fft", "special")


@pytest.fixture(scope="module")
def rows(sh):
    return json.loads(sh("torch ops --json"))


@pytest.mark.parametrize("argv", ["", "help", "-h", "--help"])
def test_overview_lists_the_groups_and_the_common_commands(sh, argv):
    out = sh("torch " + argv)
    groups = out.split("command groups")[1].split("\n\n")[0]
    for group in ("nn", "optim", "sched", "daemon", "scope", "checkpoint", "linalg", "fft", "special"):
        assert "\n  %s " % group in groups
    common = out.split("common commands:")[1].split("\n\n")[0]
    for name in ("tensor", "value", "print", "forward", "train_step"):
        assert "\n  %s " % name in common


def _members(rows, group):
    """The next word of every row under a group, from `torch ops --json`."""
    prefix = group.replace(" ", ".") + "."
    return {r["name"][len(prefix):].split(".")[0] for r in rows if r["name"].startswith(prefix)}


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("flag", ["", "-h", "--help"])
def test_group_alone_or_with_help_lists_each_subcommand_on_one_line(sh, rows, group, flag):
    if group == "fft" and flag == "":
        pytest.skip("`torch fft` alone is torch.fft.fft (its bare name), reading a piped tensor")
    r = sh.run("torch %s %s" % (group, flag))
    assert r.code == 0 and r.err == ""
    assert r.out.startswith("usage: torch %s COMMAND" % group)
    lines = r.out.split("\n")
    members = _members(rows, group)
    assert members
    for word in members:
        listed = [ln for ln in lines if ln.startswith("  %s " % word) or ln == "  " + word]
        assert len(listed) == 1, (word, r.out)


def test_scope_listing_shows_its_block_form_and_the_block_form_still_runs(sh):
    out = sh("torch scope")
    assert "torch scope -- CMD" in out and "\n  begin " in out and "\n  end " in out
    assert sh("torch scope -- true; echo $?") == "0"


def test_fft_alone_is_still_the_fft_op(sh):
    assert sh("torch tensor '[1.0, 2.0]' | torch fft | torch value") == "[[3.0,0.0],[-1.0,0.0]]"
