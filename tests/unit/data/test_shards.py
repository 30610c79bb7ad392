"""data/shards.py: quoted shard patterns expand as bash expands them (bash itself is the oracle), relative to the
caller's cwd; a glob with no match, or a brace-named shard that is missing, is a file_error naming it."""
import subprocess

import pytest

from torchsh.data import shards
from torchsh.errors import TorchshError

WORDS = ["train-{000..012}.tar", "x{1..10..3}", "{a,b{c,d}}e", "{a..e}", "{b,a}.parquet", "x{-01..2}", "{5..1}",
         "x{}y", "a{1}", "{a..z..5}", "{00..-3}", "s{1,2}-{08..11}", "plain.parquet", "a{b,c"]


@pytest.mark.parametrize("word", WORDS)
def test_braces_expand_as_bash_expands_them(word):
    bash = subprocess.run(["bash", "-c", "printf '%s\\n' " + word], capture_output=True, text=True, check=True)
    assert shards.braces(word) == bash.stdout.split("\n")[:-1]


def _touch(folder, *names):
    for name in names:
        (folder / name).write_bytes(b"")


def test_globs_match_sorted_relative_to_the_callers_cwd_as_bash_does(tmp_path):
    _touch(tmp_path, "b.parquet", "a.parquet", "c.parquet", ".hidden.parquet", "a.csv")
    bash = subprocess.run(["bash", "-c", "printf '%s\\n' *.parquet [ab].parquet"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout.split()
    got = shards.expand(["*.parquet", "[ab].parquet"], str(tmp_path))
    assert got == [str(tmp_path / name) for name in bash]
    assert shards.expand([str(tmp_path / "?.csv")]) == [str(tmp_path / "a.csv")]


def test_braces_then_globs_in_one_pattern(tmp_path):
    _touch(tmp_path, "s1-a.arrow", "s1-b.arrow", "s2-a.arrow")
    assert shards.expand(["s{1,2}-*.arrow"], str(tmp_path)) == [str(tmp_path / n)
                                                               for n in ("s1-a.arrow", "s1-b.arrow", "s2-a.arrow")]


def test_a_missing_brace_named_shard_is_refused_by_name(tmp_path):
    _touch(tmp_path, "x-000.parquet", "x-001.parquet", "x-003.parquet")
    with pytest.raises(TorchshError) as e:
        shards.expand(["x-{000..003}.parquet"], str(tmp_path))
    assert e.value.code == "file_error" and str(tmp_path / "x-002.parquet") in str(e.value)


def test_a_glob_that_matches_nothing_is_refused_by_name(tmp_path):
    with pytest.raises(TorchshError) as e:
        shards.expand(["none-*.parquet"], str(tmp_path))
    assert e.value.code == "file_error" and "none-*.parquet" in str(e.value)


def test_a_plain_word_passes_untouched_and_a_file_named_like_a_glob_is_itself(tmp_path):
    _touch(tmp_path, "[x].npy")
    assert shards.expand(["missing.npy"], str(tmp_path)) == [str(tmp_path / "missing.npy")]  # its opener refuses it
    assert shards.expand(["[x].npy"], str(tmp_path)) == [str(tmp_path / "[x].npy")]
