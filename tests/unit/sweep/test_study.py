"""The study's edges: Optuna missing (the extra to install), a storage URL that cannot be opened (the
caller's bad_argument, its password not shown)."""
import sys

import pytest

from torchsh.errors import TorchshError
from torchsh.sweep import study


def test_without_optuna_a_sweep_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if not installed
    with pytest.raises(TorchshError) as e:
        study.optuna()
    assert e.value.code == "missing_extra" and e.value.hint == "pip install 'torchsh[sweep]'"


def test_a_storage_that_cannot_be_opened_is_the_callers_bad_argument(tmp_path):
    class Ctx:
        def path(self, text, mode):
            return str(tmp_path / text)
    with pytest.raises(TorchshError) as e:
        study.storage(Ctx(), "postgresql://user:secret@localhost:1/db", None)
    assert e.value.code == "bad_argument" and "secret" not in e.value.message and "user:***@" in e.value.message


class _Ctx:
    """The command's context as storage() uses it: a path of the caller's."""

    def __init__(self, folder):
        self.folder = folder

    def path(self, text, mode):
        return str(self.folder / text)


@pytest.mark.parametrize("url", ["redis://user:s3cret@localhost:1/0", "http://user:s3cret@localhost:1/x",
                                 "https://user:s3cret@h/x", "postgresql://user:s3cret@localhost:1/db",
                                 "mysql://user:s3cr@et@localhost:1/db"])
def test_a_storage_url_s_password_is_in_no_line_a_refusal_prints(tmp_path, url):
    """The URL was masked once in a message whose next words (the exception's, a path's) printed it again."""
    with pytest.raises(TorchshError) as e:
        study.storage(_Ctx(tmp_path), url, None)
    assert e.value.code in ("bad_argument", "file_error"), e.value.code
    shown = e.value.message + (e.value.hint or "")
    assert "s3cr" not in shown and "et@" not in shown, shown
    assert not any(p.name.startswith(("redis", "http")) for p in tmp_path.iterdir())  # no journal file named so


def test_shown_masks_every_url_in_a_text_and_the_given_one_wherever_it_is_quoted():
    url = "postgresql://me:pa%40ss@db.example/x"
    assert study.shown(url) == "postgresql://me:***@db.example/x"
    assert study.shown("tried %s, then /tmp/postgresql:/me:pa%%40ss@db.example/x and 'pa@ss'" % url, url) == \
        "tried postgresql://me:***@db.example/x, then /tmp/postgresql:/me:***@db.example/x and '***'"
    assert study.shown("sqlite:///runs/s.db") == "sqlite:///runs/s.db" and study.shown(None) is None
